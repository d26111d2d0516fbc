"""The LVEs that a git diff touches, so CI does only the work a pull request asks for.

`base...head` semantics: what changed on head since it left base (their merge base), falling back to a
direct two-dot diff when the two have no common history. Without a head revision, the work tree is the
head: committed, staged, unstaged and untracked changes all count ("what have I changed?"), and without a
base the default branch is the base. The cost grows with the size of the diff, not of the repository:
git looks up every candidate `test.json` of the diff's folders at once (`git ls-tree` with the paths).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from lvegit.errors import UsageError
from lvegit.repo import REPOSITORY_DIR, TEST_FILE, Repository

WORK_TREE = "work tree"
PATHS_PER_CALL = 2000  # pathspecs per git call, far below the limits on a command line


@dataclass
class Changes:
    base: str  # the commit compared against (the merge base, or base itself)
    head: str  # a commit, or WORK_TREE
    base_ref: str = ""  # the revision the user gave or lvegit chose, as named
    base_reason: str = ""  # why that base, when lvegit chose it
    changed: list[str] = field(default_factory=list)  # LVE folders on head, relative to the LVE root
    removed: list[str] = field(default_factory=list)  # LVE folders that exist on base only
    renamed: dict[str, str] = field(default_factory=dict)  # new folder -> old folder

    def as_json(self) -> dict[str, Any]:
        return {
            "base": self.base,
            "base_ref": self.base_ref,
            "head": self.head,
            "changed": self.changed,
            "removed": self.removed,
            "renamed": [{"from": old, "to": new} for new, old in self.renamed.items()],
        }


def describe_comparison(changes: Changes) -> str:
    """What was compared, naming the base lvegit chose: 'between 3f2a9c1e0b7d and 9e81c0d4f5a2'."""
    base = changes.base[:12]
    if changes.base_reason:
        base += f" (merge base with {changes.base_ref}, {changes.base_reason})"
    head = (
        "the work tree (uncommitted and untracked files included)"
        if changes.head == WORK_TREE
        else changes.head[:12]
    )
    return f"between {base} and {head}"


def _open(repo: Repository) -> Any:
    import git  # gitpython: imported only by the commands that need history

    try:
        return git.Repo(repo.root, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise UsageError(f"{repo.root} is not inside a git repository") from None


def _commit(git_repo: Any, ref: str) -> Any:
    import git

    try:
        return git_repo.commit(ref)
    except (git.BadName, git.BadObject, ValueError):
        raise UsageError(f"unknown git revision '{ref}' (is the history fetched? try git fetch)") from None


def _run(git_repo: Any, *args: str) -> str:
    """A git command's output, or '' when it fails (the callers ask questions git may answer with no)."""
    import git

    try:
        return str(git_repo.git.execute(["git", *args]))
    except git.GitCommandError:
        return ""


def default_base(git_repo: Any) -> tuple[str, str]:
    """The branch a contributor's work goes into, and why: the current branch's upstream, else the
    remote's default branch (origin/HEAD), else main or master."""
    upstream = _run(git_repo, "rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{upstream}")
    if upstream:
        return upstream, "the upstream of the current branch"
    remote_head = _run(git_repo, "symbolic-ref", "--short", "refs/remotes/origin/HEAD")
    if remote_head:
        return remote_head, "the default branch of origin"
    for name in ("main", "master"):
        if _run(git_repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{name}"):
            return name, "the local default branch"
    raise UsageError(
        "no default branch to compare with (no upstream, no origin/HEAD, no main or master): pass --base REF"
    )


class _LVELocator:
    """Maps paths (relative to the git root) to LVE folders on one side of a diff: a commit, whose
    candidate test.json paths git looks up all at once, or the work tree on disk."""

    def __init__(self, git_repo: Any, commit: str | None, prefix: PurePosixPath) -> None:
        self.git_repo = git_repo
        self.commit = commit  # None: the work tree
        self.prefix = prefix / REPOSITORY_DIR
        self.known: dict[PurePosixPath, bool] = {}

    def folders(self, path: str) -> list[PurePosixPath]:
        """The folders that could be the LVE holding `path`, innermost first."""
        candidate = PurePosixPath(path)
        if self.prefix not in candidate.parents:
            return []
        return [folder for folder in candidate.parents if self.prefix in folder.parents]

    def learn(self, paths: Iterable[str]) -> None:
        """Look up every candidate folder of `paths` in one go (in chunks for huge diffs)."""
        unknown = sorted({f for p in paths for f in self.folders(p)} - self.known.keys())
        for folder in unknown:
            self.known[folder] = False
        if self.commit is None:
            root = Path(self.git_repo.working_tree_dir)
            for folder in unknown:
                self.known[folder] = (root / folder / TEST_FILE).is_file()
            return
        for start in range(0, len(unknown), PATHS_PER_CALL):
            chunk = [(folder / TEST_FILE).as_posix() for folder in unknown[start : start + PATHS_PER_CALL]]
            found = _run(
                self.git_repo, "--literal-pathspecs", "ls-tree", "-z", "--name-only", "--full-tree",
                self.commit, "--", *chunk,
            )  # fmt: skip
            for name in filter(None, found.split("\0")):
                self.known[PurePosixPath(name).parent] = True

    def is_lve(self, folder: PurePosixPath) -> bool:
        if folder not in self.known:
            self.learn([(folder / TEST_FILE).as_posix()])
        return self.known[folder]

    def lve_of(self, path: str) -> PurePosixPath | None:
        return next((folder for folder in self.folders(path) if self.is_lve(folder)), None)


def _name_status(git_repo: Any, *revisions: str) -> list[tuple[str, str, str | None]]:
    """(status letter, path, new path for renames) of each file changed from the first revision to the
    second, or to the work tree when only one is given."""
    output = git_repo.git.diff(*revisions, "--name-status", "-z", "-M", "--no-color", "--no-ext-diff")
    fields = output.split("\0")
    entries = []
    index = 0
    while index < len(fields) and fields[index]:
        status = fields[index][0]
        if status in "RC":
            entries.append((status, fields[index + 1], fields[index + 2]))
            index += 3
        else:
            entries.append((status, fields[index + 1], None))
            index += 2
    return entries


def _untracked(git_repo: Any) -> list[tuple[str, str, str | None]]:
    output = git_repo.git.ls_files("-z", "--others", "--exclude-standard")
    return [("A", path, None) for path in output.split("\0") if path]


def changed_lves(repo: Repository, base: str | None = None, head: str | None = "HEAD") -> Changes:
    """The LVEs changed between `base` (default: the default branch) and `head` (None: the work tree,
    with everything uncommitted and untracked)."""
    git_repo = _open(repo)
    reason = ""
    if base is None:
        base, reason = default_base(git_repo)
    work_tree = head is None
    head_commit = _commit(git_repo, head or "HEAD")
    base_commit = _commit(git_repo, base)
    merge_bases = git_repo.merge_base(base_commit, head_commit)
    since = merge_bases[0] if merge_bases else base_commit  # no common history: a two-dot diff
    # The LVE root may be a folder inside the git work tree; diff paths are relative to the work tree.
    prefix = PurePosixPath(
        Path(repo.root).resolve().relative_to(Path(git_repo.working_tree_dir).resolve()).as_posix()
    )
    if work_tree:
        entries = _name_status(git_repo, since.hexsha) + _untracked(git_repo)
        on_head = _LVELocator(git_repo, None, prefix)
    else:
        entries = _name_status(git_repo, since.hexsha, head_commit.hexsha)
        on_head = _LVELocator(git_repo, head_commit.hexsha, prefix)
    on_base = _LVELocator(git_repo, since.hexsha, prefix)
    on_head.learn(new_path or path for _status, path, new_path in entries)
    on_base.learn(path for _status, path, _new_path in entries)
    changed: set[PurePosixPath] = set()
    removed: set[PurePosixPath] = set()
    renamed: dict[PurePosixPath, PurePosixPath] = {}
    for status, path, new_path in entries:
        lve = on_head.lve_of(new_path or path)
        if lve is not None:
            changed.add(lve)
        old_lve = on_base.lve_of(path)
        if old_lve is not None and not on_head.is_lve(old_lve):
            if status == "R" and lve is not None and PurePosixPath(path).name == TEST_FILE:
                renamed[lve] = old_lve
            else:
                removed.add(old_lve)
    removed -= set(renamed.values())

    def shown(folder: PurePosixPath) -> str:
        return folder.relative_to(prefix).as_posix() if prefix != PurePosixPath(".") else folder.as_posix()

    return Changes(
        base=since.hexsha,
        head=WORK_TREE if work_tree else head_commit.hexsha,
        base_ref=base,
        base_reason=reason,
        changed=sorted(map(shown, changed)),
        removed=sorted(map(shown, removed)),
        renamed={shown(new): shown(old) for new, old in sorted(renamed.items())},
    )
