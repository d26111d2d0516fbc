"""Options shared by several commands, defined once."""

from __future__ import annotations

import contextlib
import difflib
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from lvegit.base.errors import RepositoryNotFound, UsageError
from lvegit.base.output import count, note
from lvegit.lve.repo import Repository, find_root, is_withheld

if TYPE_CHECKING:
    from lvegit.base.settings import Settings

F = TypeVar("F", bound=Callable[..., Any])


class SuggestingGroup(click.Group):
    """A command group that answers a mistyped command with the one it probably meant, as click does for
    a mistyped option."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError:
            name = args[0] if args else ""
            close = difflib.get_close_matches(name, self.list_commands(ctx), n=1, cutoff=0.6)
            if not close or self.get_command(ctx, name) is not None:
                raise
            raise click.UsageError(f"No such command '{name}'. Did you mean '{close[0]}'?", ctx) from None


def repo_option(function: F) -> F:
    return click.option(
        "--repo",
        "repo_path",
        type=click.Path(exists=True, file_okay=False, path_type=Path),
        default=None,
        help="The LVE repository (default: found by walking up from the current directory "
        "to .lverepo or a repository/ folder).",
    )(function)


def history_option(function: F) -> F:
    return click.option(
        "--history",
        "history_path",
        type=click.Path(file_okay=False, path_type=Path),
        help="The run history folder (default: LVEGIT_HISTORY_DIR, else history/ at the repository root).",
    )(function)


def format_option(function: F) -> F:
    return click.option(
        "--format",
        "output_format",
        type=click.Choice(["text", "json"]),
        default="text",
        show_default=True,
        help="Output format.",
    )(function)


def retries_option(function: F) -> F:
    return click.option(
        "--retries",
        type=click.IntRange(0, 20),
        default=4,
        show_default=True,
        help="Retries of a request that failed transiently (429, 5xx, timeout, connection, bad body).",
    )(function)


def local_model_options(function: F) -> F:
    """--device and --dtype for local (transformers) models: they override the routing file's choice."""
    from lvegit.models.placement import DTYPES, check_device  # only the commands that run models

    def device(_context: click.Context, _param: click.Parameter, value: str | None) -> str | None:
        try:
            return None if value is None else check_device(value, "--device")
        except UsageError as exc:
            raise click.BadParameter(str(exc).removeprefix("--device: ")) from None

    function = click.option(
        "--dtype",
        type=click.Choice(DTYPES),
        help="Precision of local transformers models (default auto: bfloat16 or float16 on a GPU, "
        "float32 on the CPU).",
    )(function)
    return click.option(
        "--device",
        callback=device,
        metavar="auto|cuda|cuda:N|mps|cpu",
        help="Where local transformers models run (default auto: CUDA, then Apple MPS, then the CPU).",
    )(function)


def no_cache_option(function: F) -> F:
    return click.option(
        "--no-cache",
        is_flag=True,
        help="Judge every instance again instead of reading verdicts of unchanged checkers and responses "
        "from .lvegit-cache/ (LVEGIT_CACHE_DIR moves it, LVEGIT_CACHE=read or off limits it).",
    )(function)


def revision_options(function: F) -> F:
    function = click.option(
        "--head",
        help="The revision with the changes (a pull request's head). Default: HEAD with --base; without "
        "--base, the work tree (uncommitted and untracked files included).",
    )(function)
    return click.option(
        "--base",
        help="The revision to compare with (a pull request's base branch or commit). Default: the current "
        "branch's upstream, else origin/HEAD, else main or master.",
    )(function)


def head_revision(base: str | None, head: str | None) -> str | None:
    """--head as given; without it, HEAD when --base is given, else the work tree (None)."""
    return head if head is not None else "HEAD" if base is not None else None


def selection_options(function: F) -> F:
    """LVE paths (folders of LVEs, folders holding LVEs, or files inside one), --all, or --changed; the
    command receives them as one `selection: Selection`."""

    @functools.wraps(function)
    def with_selection(
        *args: Any,
        paths: tuple[Path, ...],
        all_lves: bool,
        changed: bool,
        base: str | None,
        head: str | None,
        skip_other_files: bool,
        tags: tuple[str, ...],
        **kwargs: Any,
    ) -> Any:
        selection = Selection(paths, all_lves, changed, base, head, skip_other_files, tags)
        return function(*args, selection=selection, **kwargs)

    decorated: Any = revision_options(with_selection)
    decorated = click.option(
        "--tag",
        "tags",
        multiple=True,
        metavar="SCHEME:VALUE",
        help="Only the LVEs tagged with this taxonomy entry (repeat: all of them), e.g. "
        "owasp-llm:2025:LLM01, owasp-agentic:2026:ASI01, atlas:AML.T0051 (and its sub-techniques), "
        "avid:S0403, cwe:CWE-1426, or the publisher's id alone (LLM01:2025, AML.T0051.001, CWE-1426). "
        "Alone, it picks from every LVE.",
    )(decorated)
    decorated = click.option(
        "--skip-other-files",
        is_flag=True,
        help="Pass over paths that are in no LVE (or no longer exist) instead of refusing them, as a "
        "pre-commit hook needs: it passes every staged file.",
    )(decorated)
    decorated = click.option(
        "--changed",
        is_flag=True,
        help="The LVEs a git diff touches: your work tree against the default branch, or --base...--head.",
    )(decorated)
    decorated = click.option(
        "--all",
        "all_lves",
        is_flag=True,
        help="Every LVE of the repository. Without paths, --all or --changed: the LVEs below the current "
        "directory when it lies inside repository/, else every LVE.",
    )(decorated)
    return click.argument("paths", nargs=-1, type=click.Path(path_type=Path))(decorated)  # type: ignore[no-any-return]


def strict_option(function: F) -> F:
    return click.option(
        "--strict", is_flag=True, help="Treat warnings (unknown keys, unknown tags, ...) as errors."
    )(function)


def lve_command_options(
    *own: Callable[[Any], Any], cache: bool = False, models: bool = False
) -> Callable[[F], F]:
    """The option stack of a command over selected LVEs, in one order: the LVE paths, --all, --changed,
    --tag, ... (`selection: Selection`); the command's `own` options; --no-cache where it judges recorded
    responses; --device, --dtype and --retries where it calls models; then --format and --repo."""

    def decorate(function: F) -> F:
        stack: list[Callable[[Any], Any]] = [
            selection_options,
            *own,
            *([no_cache_option] if cache else []),
            *([local_model_options, retries_option] if models else []),
            format_option,
            repo_option,
        ]
        decorated: Any = function
        for option in reversed(stack):  # the last decorator is applied first
            decorated = option(decorated)
        return decorated  # type: ignore[no-any-return]

    return decorate


@dataclass(frozen=True)
class Selection:
    paths: tuple[Path, ...]
    all_lves: bool
    changed: bool
    base: str | None
    head: str | None
    skip_other_files: bool = False
    tags: tuple[str, ...] = ()

    def resolve(self, repo: Repository, withheld: bool = False) -> list[Path]:
        """The LVE folders to work on: those the paths, --all or --changed name, then those of them that
        carry every --tag; `withheld`: withheld LVEs too (for commands that handle them), where no --tag
        asks (their tags are in their abstract)."""
        if not self.tags:
            return self._named(repo, withheld)
        from lvegit.lve.spec import load_lve
        from lvegit.lve.taxonomy import parse_selector, selected

        selectors = [parse_selector(tag) for tag in self.tags]
        everything = not (self.paths or self.all_lves or self.changed)
        named = repo.lve_dirs() if everything else self._named(repo)
        picked = []
        for lve_dir in named:
            lve = load_lve(repo, lve_dir)[0]
            if lve is not None and selected(lve.tags, selectors):
                picked.append(lve_dir)
        return picked

    def stream(self, repo: Repository) -> Iterator[Path]:
        """As `resolve`, but with --all alone the LVEs come one by one as the repository's folders are
        walked: a run over a corpus starts before the walk ends."""
        if self.all_lves and not (self.paths or self.changed or self.tags or self.base or self.head):
            return repo.iter_lve_dirs()
        return iter(self.resolve(repo))

    def _named(self, repo: Repository, withheld: bool = False) -> list[Path]:
        if self.changed:
            if self.paths or self.all_lves:
                raise UsageError("--changed selects LVEs by itself: give no paths and no --all")
            from lvegit.git.changes import changed_lves, describe_comparison

            changes = changed_lves(repo, self.base, head_revision(self.base, self.head))
            note(f"{count(len(changes.changed), 'changed LVE')} {describe_comparison(changes)}")
            found = [repo.root / path for path in changes.changed if (repo.root / path).is_dir()]
            return [d for d in found if withheld or not is_withheld(d)]
        if self.base is not None or self.head is not None:
            raise UsageError("--base and --head choose what --changed compares: add --changed")
        paths = list(self.paths)
        if paths:  # an LVE id (LVE-2026-0042) names its folder
            from lvegit.lve.ids import resolve_ids

            paths = resolve_ids(repo, paths)
        return repo.select(paths, self.all_lves, self.skip_other_files, withheld)


def current_settings() -> Settings:
    """The settings of this invocation: its command line and LVEGIT_* environment, read once by the
    command group, with the retry policy `cli.main` was given."""
    from lvegit.base.settings import current

    return current()


def open_repository(repo_path: Path | None) -> Repository:
    """The repository of --repo; else the one at or above the first LVE path the command was given as an
    absolute path (an LVE outside the current folder is read in its own repository); else the one at or
    above the current folder."""
    if repo_path is None:
        for path in _given_paths():
            if path.is_absolute():
                with contextlib.suppress(RepositoryNotFound):
                    return Repository(find_root(path))
    return Repository.discover(repo_path)


def _given_paths() -> list[Path]:
    """The LVE paths of the running command: its PATHS (selection_options) or its PATH (show)."""
    context = click.get_current_context(silent=True)
    params = context.params if context is not None else {}
    paths = params.get("paths") or ()
    single = params.get("path")
    given = [*paths, *([single] if single is not None else [])]
    return [path for path in given if isinstance(path, Path)]
