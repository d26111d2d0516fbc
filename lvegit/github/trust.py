"""What a pull request's check reads from refs the pull request cannot change, instead of its work tree.

In a pull request every file is the contributor's. Three of them decide more than their own LVE: the
routing file (lvegit.toml, or [tool.lvegit] in pyproject.toml) says where model requests go and which key
they carry, the run history says where each LVE reproduces and since when it is fixed, and the id registry
(lve-ids.json) gives each LVE its stable id. The check reads them with git at trusted refs: the routing
file and the id registry at the pull request's base commit (a pull request that changes the registry fails
its check: ids are given after merge); the run history from
the history branch where the workflow checked it out (a nested checkout of lvegit-history in the history
folder), else from a local or fetched lvegit-history branch, else from the base commit's history folder.
What the pull request changed there is named in the comment, for the maintainers to approve like checker
code; its own versions are never used.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from lvegit.base.errors import UsageError
from lvegit.git.vcs import GitCheckout
from lvegit.history.store import RUN_FILE
from lvegit.lve.ids import MAX_REGISTRY_BYTES, REGISTRY
from lvegit.lve.routing_file import MAX_CONFIG_BYTES, ROUTING_FILES

HISTORY_BRANCH: Final = "lvegit-history"
MAX_RUN_FILE_BYTES: Final = 64 * 1024**2


# The text of a file at the repository root as of the base commit, read up to a limit (bytes).
AtBase = Callable[[str, int], str | None]


@dataclass
class Trusted:
    """Where a pull request's check reads routing, history and ids from, and what the comment says of it."""

    at_base: AtBase
    history: Path | None  # a folder holding the trusted run files; None: there is no history
    notes: list[str] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)  # what fails the check whatever the policy

    def routing(self, name: str) -> str | None:
        """A routing file (lvegit.toml, pyproject.toml) at the base commit: the Reader model routing takes."""
        if name not in ROUTING_FILES:
            raise ValueError(f"{name} is no routing file")  # lvegit's own mistake
        return self.at_base(name, MAX_CONFIG_BYTES)

    def id_registry(self) -> str | None:
        """The id registry (lve-ids.json) at the base commit."""
        return self.at_base(REGISTRY, MAX_REGISTRY_BYTES)


def _at(checkout: GitCheckout, commit: str, top: str) -> AtBase:
    """The files at the repository root (`top`, from the top of the git work tree) as of `commit`."""

    def read(name: str, limit: int) -> str | None:
        data = checkout.read_at(commit, _in(top, name), limit + 1)
        if data is None:
            return None
        if len(data) > limit:
            raise UsageError(f"{name} at {commit[:12]} is larger than {limit} bytes")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise UsageError(f"{name} at {commit[:12]} is not UTF-8 text") from None

    return read


def _plain_folder(folder: Path) -> bool:
    """Whether no link leads to `folder` (a pull request may commit the history folder as a link)."""
    return os.path.realpath(folder) == os.path.normpath(os.path.abspath(folder))


def _nested_checkout(folder: Path) -> GitCheckout | None:
    """The history branch as the workflow templates check it out: a repository of its own in `folder`."""
    if not _plain_folder(folder) or not (folder / ".git").exists():
        return None
    try:
        nested = GitCheckout(folder)
    except UsageError:
        return None
    return nested if nested.work_tree.resolve() == folder.resolve() else None


def _copy_runs(checkout: GitCheckout, commit: str, folder: str, into: Path) -> int:
    """Write the run files of `folder` as of `commit` into `into`; how many there were."""
    names = [name for name in checkout.names_at(commit, folder) if RUN_FILE.match(name)]
    paths = {name: f"{folder}/{name}" if folder else name for name in names}
    read = checkout.read_all_at(commit, list(paths.values()), MAX_RUN_FILE_BYTES)
    for name, path in paths.items():
        data = read[path]
        if data is None:
            raise UsageError(f"{HISTORY_BRANCH}: {name} is larger than {MAX_RUN_FILE_BYTES} bytes")
        (into / name).write_bytes(data)
    return len(names)


def _history(
    checkout: GitCheckout, base: str, history_folder: Path, into: Path, nested_allowed: bool
) -> tuple[Path | None, str | None]:
    """The trusted run history copied into `into`, and where it came from (the checkout in the history
    folder only where `nested_allowed`)."""
    into.mkdir(parents=True, exist_ok=True)
    nested = _nested_checkout(history_folder) if nested_allowed else None
    if nested is not None:
        commit = nested.commit("HEAD")
        _copy_runs(nested, commit, "", into)
        return into, f"the run history: the checkout of its branch in {history_folder.name}/ at {commit[:12]}"
    for ref in (f"refs/remotes/origin/{HISTORY_BRANCH}", f"refs/heads/{HISTORY_BRANCH}"):
        if checkout.has_commit(ref):
            commit = checkout.commit(ref)
            _copy_runs(checkout, commit, "", into)
            return into, f"the run history: the {HISTORY_BRANCH} branch at {commit[:12]}"
    top = _from_top(checkout, history_folder)
    if top is None or not _copy_runs(checkout, base, top, into):
        return None, None  # none at the base commit, or a folder outside the repository: no part of it
    return into, f"the run history: {top}/ at the base commit {base[:12]}"


def _from_top(checkout: GitCheckout, folder: Path) -> str | None:
    """`folder` from the top of the git work tree, its links not followed; None when outside it."""
    try:
        relative = Path(os.path.normpath(os.path.abspath(folder))).relative_to(checkout.work_tree.resolve())
    except ValueError:
        return None
    return relative.as_posix()


def _in(top: str, name: str) -> str:
    """A path below the repository root (`top`, from the top of the git work tree) from the top."""
    return f"{top}/{name}" if top else name


def _changed_paths(checkout: GitCheckout, since: str, head: str) -> set[str]:
    """Every path the pull request changed (both names of a renamed file), from the top of the work tree."""
    return {
        path
        for change in checkout.changed_files(since, head)
        for path in (change.path, change.new_path)
        if path is not None
    }


def _routing_note(top: str, changed: set[str], base: str) -> list[str]:
    """What the comment says when the pull request changes a routing file."""
    routing_changed = [name for name in ROUTING_FILES if _in(top, name) in changed]
    if not routing_changed:
        return []
    return [
        f"⚠️ This pull request changes {' and '.join(routing_changed)}, which can say where model "
        "requests go and which key they carry: the check used the base commit's "
        f"({base[:12]}); review the change like checker code before merging."
    ]


def _history_refusal(checkout: GitCheckout, head: str, history_top: str | None) -> list[str]:
    """Why the check fails when the pull request makes the history folder a submodule (a gitlink: a
    checkout with submodules fetches a repository of its choosing there) or a link: either would make its
    own history look trusted."""
    made = checkout.kind_at(head, history_top) if history_top else None
    if made not in ("submodule", "link"):
        return []
    return [
        f"this pull request makes {history_top}/ a {made}: the run history is never read from a "
        "submodule or a link (the history shown is from the history branch or the base commit)"
    ]


def _history_change_note(history_top: str | None, changed: set[str]) -> list[str]:
    """What the comment says when the pull request changes files of the history folder."""
    if history_top is None or not any(
        path == history_top or path.startswith(f"{history_top}/") for path in changed
    ):
        return []
    return [
        f"⚠️ This pull request changes {history_top}/: its files are not read; the run history shown "
        "is the trusted one."
    ]


def for_pull_request(
    checkout: GitCheckout, root: Path, base: str, since: str, head: str, history_folder: Path, scratch: Path
) -> Trusted:
    """What a pull request's check trusts: `base`, the base branch's commit; `since`, where the pull
    request left it (the merge base); `head`, its head commit; `scratch`, an empty folder for the history."""
    top = checkout.relative(root)
    changed = _changed_paths(checkout, since, head)
    history_top = _from_top(checkout, history_folder)
    refusals = _history_refusal(checkout, head, history_top)
    history, source = _history(checkout, base, history_folder, scratch, nested_allowed=not refusals)
    notes = [
        *_routing_note(top, changed, base),
        *([source[0].upper() + source[1:] + "."] if source is not None else []),
        *_history_change_note(history_top, changed),
    ]
    if _in(top, REGISTRY) in changed:
        refusals.append(f"this pull request changes {REGISTRY}: ids are given after merge by the id workflow")
    return Trusted(_at(checkout, base, top), history, notes, refusals)
