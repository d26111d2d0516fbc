"""The LVE repository on disk: its root, its LVEs, and which LVE a path belongs to."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lvegit.base.errors import LVEError, RepositoryNotFound, UsageError
from lvegit.base.files import MAX_TEST_JSON_BYTES, FileProblem, parse_json, read_text, walk

REPOSITORY_DIR = "repository"
LVEREPO_FILE = ".lverepo"
TEST_FILE = "test.json"
CHECKER_DIR = "checker"  # an LVE's custom checker: checker/checker*.py
WITHHELD_FILE = "withheld.json"  # a withheld LVE's public abstract, in place of test.json (lvegit/disclosure)


def canonical_model(model: str) -> str:
    """Bare OpenAI ids from early LVEs (`gpt-3.5-turbo`) mean `openai/...`, as lve-tools read them."""
    return f"openai/{model}" if "/" not in model and model.startswith("gpt-") else model


def model_folder(model: str) -> str:
    """The directory name for a model id: `openai/gpt-3.5-turbo` -> `openai--gpt-35-turbo`."""
    return re.sub(r"[^A-Za-z0-9-]", "", canonical_model(model).replace("/", "--"))


def _normalised(name: str, punctuation: str) -> str:
    return re.sub(r"[^a-z0-9-]", "", re.sub(r"[._]", punctuation, name.lower()))


def folder_matches_model(folder: str, model: str) -> bool:
    """Whether an LVE folder names the model. lve-tools drops every character but letters, digits and `-`
    (`openai--gpt-35-turbo`), yet hand-made folders keep `_` and `.` (`microsoft--phi-1_5`) or turn them
    into hyphens (`openai--gpt-3-5-turbo`): all of these name the same model."""
    expected = canonical_model(model).replace("/", "--")
    return any(_normalised(folder, p) == _normalised(expected, p) for p in ("", "-"))


def find_root(start: Path) -> Path:
    """Walk up from `start` to the directory holding `.lverepo` or a `repository/` folder. A marker inside
    the `repository/` folder of a repository further up is an LVE's content (a pull request can commit one
    into its LVE, with a routing file beside it): the repository is the outer one."""
    start = start.resolve()
    found = next((c for c in (start, *start.parents) if _is_root(c)), None)
    while found is not None:
        outer = next((outer for outer in found.parents if _holds(outer, found)), None)
        if outer is None:
            return found
        found = outer
    raise RepositoryNotFound(
        f"no LVE repository found at or above {start} (looked for {LVEREPO_FILE} or {REPOSITORY_DIR}/); "
        "pass --repo PATH"
    )


def _is_root(folder: Path) -> bool:
    return (folder / LVEREPO_FILE).is_file() or (folder / REPOSITORY_DIR).is_dir()


def _holds(outer: Path, folder: Path) -> bool:
    """Whether `folder` lies inside the LVE tree (`repository/`) of a repository at `outer`."""
    return _is_root(outer) and folder.is_relative_to(outer / REPOSITORY_DIR)


def text_name(name: str) -> str:
    """A file name as text: bytes that are not UTF-8 shown as escapes."""
    if name.isascii():
        return name
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return name


def is_withheld(lve_dir: Path) -> bool:
    """Whether a folder is a withheld LVE's (its abstract there, a link or not: validation says which)."""
    return os.path.lexists(lve_dir / WITHHELD_FILE)


def has_text_name(path: Path) -> bool:
    return text_name(str(path)) == str(path)


@dataclass(frozen=True)
class Repository:
    """The LVE repository a command works on. It remembers what the command read of each LVE (the text of
    its test.json, and the LVE loaded from it by `spec.load_lve`): however many steps ask (validation,
    replay, the cache key, the README, a pull request's review), an LVE is read and loaded once."""

    root: Path
    _test_json: dict[Path, str | FileProblem] = field(default_factory=dict, compare=False, repr=False)
    loaded: dict[Path, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def discover(cls, repo: Path | None) -> Repository:
        """The repository at --repo (which must be one), else the one at or above the current folder."""
        if repo is None:
            return cls(find_root(Path.cwd()))
        root = repo.resolve()
        if not ((root / LVEREPO_FILE).is_file() or (root / REPOSITORY_DIR).is_dir()):
            raise RepositoryNotFound(
                f"--repo {repo}: not an LVE repository "
                f"(it holds neither {LVEREPO_FILE} nor {REPOSITORY_DIR}/)"
            )
        return cls(root)

    @property
    def lve_root(self) -> Path:
        return self.root / REPOSITORY_DIR

    def forget(self, lve_dir: Path) -> None:
        """Let what was read of an LVE go (a run over a corpus reads each LVE once and keeps none)."""
        key = Path(os.path.normpath(lve_dir))
        self.loaded.pop(key, None)
        self._test_json.pop(key, None)

    def test_json(self, lve_dir: Path) -> str:
        """The text of an LVE's test.json, read (safely: see files.read_text) once per command."""
        key = Path(os.path.normpath(lve_dir))
        if key not in self._test_json:
            try:
                self._test_json[key] = read_text(key / TEST_FILE, MAX_TEST_JSON_BYTES, within=key)
            except FileProblem as exc:
                self._test_json[key] = exc
        found = self._test_json[key]
        if isinstance(found, FileProblem):
            raise found
        return found

    def relative(self, path: Path) -> str:
        """A path as shown to users: relative to the repository root, with forward slashes; a name that
        is not UTF-8 (a pull request may add one) with its bytes as escapes (`\\xff`), never as the
        surrogates that every encoder after this would refuse."""
        if path.is_absolute() and path.is_relative_to(self.root):  # found under the root: no resolving needed
            return text_name(path.relative_to(self.root).as_posix())
        try:
            return text_name(path.resolve().relative_to(self.root).as_posix())
        except ValueError:
            return text_name(path.as_posix())

    def lve_dirs(self, under: Path | None = None, withheld: bool = False) -> list[Path]:
        """Every directory holding test.json below `under` (default: all of repository/), sorted; with
        `withheld`, the withheld LVEs' too (holding withheld.json, lvegit.disclosure)."""
        return sorted(self.iter_lve_dirs(under, withheld))

    def iter_lve_dirs(self, under: Path | None = None, withheld: bool = False) -> Iterator[Path]:
        """The same LVE directories in the same order, each as it is found: a folder's entries are visited
        in sorted order, depth first, which is the order of sorted paths (compared part by part)."""
        top = under if under is not None else self.lve_root
        for folder, dirnames, filenames in walk(top):
            if TEST_FILE in filenames or (withheld and WITHHELD_FILE in (*filenames, *dirnames)):
                yield folder
                dirnames[:] = []  # an LVE's folders (instances/, checker/) are its own
            else:
                dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))

    def lve_dir_of(self, path: Path, withheld: bool = False) -> Path | None:
        """The LVE directory that contains `path` (a file or directory inside it), if any; with
        `withheld`, a withheld LVE's too."""
        path = path.resolve()
        lve_root = self.lve_root.resolve()
        for candidate in (path, *path.parents):
            if candidate == lve_root or lve_root not in candidate.parents:
                return None
            if (candidate / TEST_FILE).is_file() or (withheld and is_withheld(candidate)):
                return candidate
        return None

    def select(
        self, paths: list[Path], all_lves: bool, skip_others: bool = False, withheld: bool = False
    ) -> list[Path]:
        """The LVE directories a command works on: those at, inside or below `paths`; all of them with
        --all; without either, those below the current directory when it lies inside repository/, else
        all of them (one rule wherever the command runs). With `skip_others`, a path in no LVE (or gone)
        is passed over instead of refused: a pre-commit hook passes every staged file. With `withheld`,
        withheld LVEs are selected too."""
        if all_lves:
            if paths:
                raise UsageError("--all selects every LVE: give paths or --all, not both")
            return self.lve_dirs(withheld=withheld)
        if not paths:
            here = Path.cwd().resolve()
            if self.lve_root.resolve() not in (here, *here.parents):
                return self.lve_dirs(withheld=withheld)
            paths = [here]
        selected: list[Path] = []
        root = self.root.resolve()
        for path in paths:
            inside = path.exists() and (root == path.resolve() or root in path.resolve().parents)
            if not inside and not path.is_absolute() and (self.root / path).exists():
                path = self.root / path  # paths as lvegit prints them: relative to the repository root
            if not path.exists():
                if skip_others:
                    continue
                raise UsageError(f"{path}: no such file or directory")
            if root != path.resolve() and root not in path.resolve().parents:
                if skip_others:
                    continue
                raise UsageError(f"{path}: not in the repository {self.root}")
            owner = self.lve_dir_of(path, withheld)
            found = (
                [owner]
                if owner is not None
                else self.lve_dirs(path.resolve(), withheld)
                if path.is_dir()
                else []
            )
            if not found and not skip_others:
                raise UsageError(f"{path}: not inside an LVE and holds no LVE (no {TEST_FILE})")
            selected.extend(d for d in found if d not in selected)
        return selected

    def category_and_name(self, lve_dir: Path) -> tuple[str, str]:
        """The category is the first folder under repository/; the name the folder above the model folder."""
        parts = lve_dir.resolve().relative_to(self.lve_root.resolve()).parts
        if not parts:
            return "", ""
        category = parts[0]
        after = parts[1:]
        if len(after) > 1:
            return category, after[-2]
        return category, after[-1] if after else category


# `.lverepo` as the public LVE repository writes it: a host and a path without a scheme (github.com/org/lves).
_HOST_PATH = re.compile(r"[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+(?:/[A-Za-z0-9._~\-/%+@]*)?")
_HTTPS_URL = re.compile(r"https://[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*(?::\d+)?(?:/[A-Za-z0-9._~\-/%+@]*)?")


def repository_url(repo: Repository) -> str | None:
    """The https URL `.lverepo` holds (its one line; `host/path` is read as `https://host/path`); None where
    there is none or it cannot be read. Anything else (`javascript:`, `http:`, `file:`, a git remote) is an
    error naming the file, never a link in what lvegit writes (OSV references, SARIF helpUri, the site)."""
    try:
        text = read_text(repo.root / LVEREPO_FILE, 4096, within=repo.root, base_name="the repository")
    except FileProblem:
        return None
    value = text.strip()
    if not value:
        return None
    if _HOST_PATH.fullmatch(value):
        value = f"https://{value}"
    if not _HTTPS_URL.fullmatch(value):
        raise LVEError(
            f"{LVEREPO_FILE}: the repository's address must be an https:// URL such as "
            f"https://github.com/org/lves, not {value[:80]!a}"
        )
    return value


def named_checker(repo: Repository, lve_dir: Path) -> tuple[str, dict[str, Any]] | None:
    """The checker test.json names and its checker_args, read without loading the LVE (and as safely:
    a test.json that leaves the folder or is too large is not read). None when test.json does not say."""
    try:
        text = repo.test_json(lve_dir)
    except FileProblem:
        return None
    return checker_named_in(text)


def checker_named_in(text: str | bytes) -> tuple[str, dict[str, Any]] | None:
    """The checker a test.json's text names and its checker_args; None when it does not say."""
    try:
        data = parse_json(text.decode("utf-8") if isinstance(text, bytes) else text)
        args = data["checker_args"]
        name = args["checker_name"]
    except (FileProblem, UnicodeDecodeError, KeyError, TypeError):
        return None
    return (name, args) if isinstance(name, str) and isinstance(args, dict) else None
