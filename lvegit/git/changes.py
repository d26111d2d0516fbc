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

from lvegit.git.vcs import GitCheckout
from lvegit.lve.repo import REPOSITORY_DIR, TEST_FILE, WITHHELD_FILE, Repository

MARKERS = (TEST_FILE, WITHHELD_FILE)  # what makes a folder an LVE's: test.json, or a withheld LVE's abstract

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
    files: dict[str, list[str]] = field(default_factory=dict)  # changed folder -> its changed files in it


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


class _LVELocator:
    """Maps paths (relative to the git root) to LVE folders on one side of a diff: a commit, whose
    candidate test.json paths git looks up all at once, or the work tree on disk."""

    def __init__(self, checkout: GitCheckout, commit: str | None, prefix: PurePosixPath) -> None:
        self.checkout = checkout
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
            for folder in unknown:
                self.known[folder] = any((self.checkout.work_tree / folder / m).is_file() for m in MARKERS)
            return
        step = PATHS_PER_CALL // len(MARKERS)
        for start in range(0, len(unknown), step):
            chunk = [(folder / m).as_posix() for folder in unknown[start : start + step] for m in MARKERS]
            for name in self.checkout.files_in(self.commit, chunk):
                self.known[PurePosixPath(name).parent] = True

    def is_lve(self, folder: PurePosixPath) -> bool:
        if folder not in self.known:
            self.learn([(folder / TEST_FILE).as_posix()])
        return self.known[folder]

    def lve_of(self, path: str) -> PurePosixPath | None:
        return next((folder for folder in self.folders(path) if self.is_lve(folder)), None)


def changed_lves(repo: Repository, base: str | None = None, head: str | None = "HEAD") -> Changes:
    """The LVEs changed between `base` (default: the default branch) and `head` (None: the work tree,
    with everything uncommitted and untracked)."""
    checkout = GitCheckout(repo.root)
    reason = ""
    if base is None:
        base, reason = checkout.default_base()
    work_tree = head is None
    head_commit = checkout.commit(head or "HEAD")
    base_commit = checkout.commit(base)
    since = checkout.merge_base(base_commit, head_commit) or base_commit  # no common history: two-dot
    # The LVE root may be a folder inside the git work tree; diff paths are relative to the work tree.
    prefix = PurePosixPath(Path(repo.root).resolve().relative_to(checkout.work_tree.resolve()).as_posix())
    entries = checkout.changed_files(since, None if work_tree else head_commit)
    on_head = _LVELocator(checkout, None if work_tree else head_commit, prefix)
    on_base = _LVELocator(checkout, since, prefix)
    on_head.learn(change.new_path or change.path for change in entries)
    on_base.learn(change.path for change in entries)
    changed: set[PurePosixPath] = set()
    removed: set[PurePosixPath] = set()
    renamed: dict[PurePosixPath, PurePosixPath] = {}
    files: dict[PurePosixPath, list[str]] = {}
    for change in entries:
        lve = on_head.lve_of(change.new_path or change.path)
        if lve is not None:
            changed.add(lve)
            files.setdefault(lve, []).append(
                PurePosixPath(change.new_path or change.path).relative_to(lve).as_posix()
            )
        old_lve = on_base.lve_of(change.path)
        if old_lve is not None and not on_head.is_lve(old_lve):
            if change.status == "R" and lve is not None and PurePosixPath(change.path).name == TEST_FILE:
                renamed[lve] = old_lve
            else:
                removed.add(old_lve)
    removed -= set(renamed.values())

    def shown(folder: PurePosixPath) -> str:
        return folder.relative_to(prefix).as_posix() if prefix != PurePosixPath(".") else folder.as_posix()

    return Changes(
        base=since,
        head=WORK_TREE if work_tree else head_commit,
        base_ref=base,
        base_reason=reason,
        changed=sorted(map(shown, changed)),
        removed=sorted(map(shown, removed)),
        renamed={shown(new): shown(old) for new, old in sorted(renamed.items())},
        files={shown(lve): sorted(set(paths)) for lve, paths in sorted(files.items())},
    )


def moves_since_last_change(repo: Repository, path: str) -> dict[str, str]:
    """Old LVE folder -> new, for each LVE git saw move from the commit that last changed `path` (a file
    relative to the repository root) to the work tree; nothing before `path` was first committed."""
    checkout = GitCheckout(repo.root)
    since = checkout.ask("log", "-1", "--format=%H", "--", str(repo.root / path))
    if not since or not since.strip():
        return {}
    return {old: new for new, old in changed_lves(repo, since.strip(), None).renamed.items()}
