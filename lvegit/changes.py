"""The LVEs that a git diff touches, so CI does only the work a pull request asks for.

`base...head` semantics: what changed on head since it left base (their merge base), falling back to a
direct two-dot diff when the two have no common history. The cost grows with the size of the diff: each
changed path is mapped to its LVE by looking up `test.json` in its parent folders in the commit's tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from lvegit.errors import UsageError
from lvegit.repo import REPOSITORY_DIR, TEST_FILE, Repository


@dataclass
class Changes:
    base: str  # the commit compared against (the merge base, or base itself)
    head: str
    changed: list[str] = field(default_factory=list)  # LVE folders on head, relative to the LVE root
    removed: list[str] = field(default_factory=list)  # LVE folders that exist on base only
    renamed: dict[str, str] = field(default_factory=dict)  # new folder -> old folder

    def as_json(self) -> dict[str, Any]:
        return {
            "base": self.base,
            "head": self.head,
            "changed": self.changed,
            "removed": self.removed,
            "renamed": [{"from": old, "to": new} for new, old in self.renamed.items()],
        }


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


class _LVELocator:
    """Maps paths (relative to the git root) to LVE folders in one commit's tree, caching folder lookups."""

    def __init__(self, commit: Any, prefix: PurePosixPath) -> None:
        self.tree = commit.tree
        self.prefix = prefix / REPOSITORY_DIR
        self.known: dict[PurePosixPath, bool] = {}

    def is_lve(self, folder: PurePosixPath) -> bool:
        if folder not in self.known:
            try:
                self.tree / (folder / TEST_FILE).as_posix()
                self.known[folder] = True
            except KeyError:
                self.known[folder] = False
        return self.known[folder]

    def lve_of(self, path: str) -> PurePosixPath | None:
        candidate = PurePosixPath(path)
        if self.prefix not in candidate.parents:
            return None
        for folder in candidate.parents:
            if folder == self.prefix:
                return None
            if self.is_lve(folder):
                return folder
        return None


def _name_status(git_repo: Any, old: str, new: str) -> list[tuple[str, str, str | None]]:
    """(status letter, path, new path for renames) of each file changed from `old` to `new`."""
    output = git_repo.git.diff(old, new, "--name-status", "-z", "-M", "--no-color", "--no-ext-diff")
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


def changed_lves(repo: Repository, base: str, head: str = "HEAD") -> Changes:
    git_repo = _open(repo)
    head_commit = _commit(git_repo, head)
    base_commit = _commit(git_repo, base)
    merge_bases = git_repo.merge_base(base_commit, head_commit)
    since = merge_bases[0] if merge_bases else base_commit  # no common history: a two-dot diff
    # The LVE root may be a folder inside the git work tree; diff paths are relative to the work tree.
    prefix = PurePosixPath(
        Path(repo.root).resolve().relative_to(Path(git_repo.working_tree_dir).resolve()).as_posix()
    )
    on_head = _LVELocator(head_commit, prefix)
    on_base = _LVELocator(since, prefix)
    changed: set[PurePosixPath] = set()
    removed: set[PurePosixPath] = set()
    renamed: dict[PurePosixPath, PurePosixPath] = {}
    for status, path, new_path in _name_status(git_repo, since.hexsha, head_commit.hexsha):
        current = new_path or path
        lve = on_head.lve_of(current)
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
        head=head_commit.hexsha,
        changed=sorted(map(shown, changed)),
        removed=sorted(map(shown, removed)),
        renamed={shown(new): shown(old) for new, old in sorted(renamed.items())},
    )
