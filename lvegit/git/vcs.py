"""Every git operation lvegit performs, in one place and through GitPython: opening a checkout, naming
commits, the files a diff changes, fetching missing history, patches, and whether git tracks a folder.

GitPython is imported by the functions that need it, not at start-up: importing it costs about 150 ms,
most of a warm `lvegit check`. For the same reason `tracked` (asked by every check that has a verdict
cache) runs `git ls-files` itself rather than through GitPython.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lvegit.base import settings
from lvegit.base.errors import UsageError


@dataclass(frozen=True)
class FileChange:
    status: str  # git's letter: A added, D deleted, M modified, R renamed, C copied, T type changed
    path: str  # the path on the old side (for an added file, its path)
    new_path: str | None = None  # for a rename or copy, the path on the new side


def _extra_environment() -> dict[str, str]:
    """What every git command gets on top of lvegit's own environment (the Action's safe.directory entry),
    from this command's settings: nothing changes os.environ."""
    return dict(settings.current().git_environment)


class GitCheckout:
    """A git repository with a work tree, found from any folder inside it."""

    def __init__(self, folder: Path) -> None:
        import git  # gitpython

        try:
            self._repo: Any = git.Repo(folder, search_parent_directories=True)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            raise UsageError(f"{folder} is not inside a git repository") from None
        if extra := _extra_environment():
            self._repo.git.update_environment(**extra)
        self.work_tree = Path(str(self._repo.working_tree_dir))

    def commit(self, ref: str) -> str:
        """The full hash of the commit `ref` names."""
        import git

        try:
            return str(self._repo.commit(ref).hexsha)
        except (git.BadName, git.BadObject, ValueError):
            raise UsageError(
                f"unknown git revision '{ref}' (is the history fetched? try git fetch)"
            ) from None

    def has_commit(self, ref: str) -> bool:
        return self.ask("cat-file", "-e", f"{ref}^{{commit}}") is not None

    def merge_base(self, base: str, head: str) -> str | None:
        """Where `head` left `base`; None when the two have no common history."""
        bases = self._repo.merge_base(base, head)
        return str(bases[0].hexsha) if bases else None

    def ask(self, *args: str) -> str | None:
        """The output of a git command, or None when git answers no (fails): the callers ask questions
        such as 'is there an upstream?'."""
        import git

        try:
            return str(self._repo.git.execute(["git", *args]))
        except git.GitCommandError:
            return None

    def run(self, *args: str, failure: str) -> str:
        """The output of a git command that must succeed; a UsageError starting with `failure` if not."""
        import git

        try:
            return str(self._repo.git.execute(["git", *args]))
        except git.GitCommandError as exc:
            detail = exc.stderr.strip().removeprefix("stderr:").strip(" '\n")
            raise UsageError(f"{failure}: {detail}") from None

    def changed_files(self, since: str, head: str | None) -> list[FileChange]:
        """The files changed from commit `since` to commit `head`, renames detected; head None: to the
        work tree, with staged, unstaged and untracked (not ignored) files."""
        # git's NUL-separated name-status, parsed here: GitPython's Diff objects cut a path at a newline
        # (3.2.1), and a pull request names its own folders.
        revisions = [since] if head is None else [since, head]
        output = self._repo.git.diff(*revisions, "--name-status", "-z", "-M", "--no-color", "--no-ext-diff")
        fields = str(output).split("\0")
        changes = []
        index = 0
        while index < len(fields) and fields[index]:
            status = fields[index][0]
            renamed = status in "RC"
            changes.append(FileChange(status, fields[index + 1], fields[index + 2] if renamed else None))
            index += 3 if renamed else 2
        if head is None:
            changes += [FileChange("A", path) for path in self.untracked_files()]
        return changes

    def files_in(self, commit: str, paths: list[str]) -> list[str]:
        """Which of `paths` (taken literally, relative to the work tree) exist in `commit`, in one call."""
        found = self._repo.git.execute(
            [
                "git",
                "--literal-pathspecs",
                "ls-tree",
                "-z",
                "--name-only",
                "--full-tree",
                commit,
                "--",
                *paths,
            ]
        )
        return [name for name in str(found).split("\0") if name]

    def untracked_files(self) -> list[str]:
        return [
            p for p in str(self._repo.git.ls_files("-z", "--others", "--exclude-standard")).split("\0") if p
        ]

    def read(self, commit: str, path: Path) -> bytes | None:
        """The contents of the file at `path` (in the work tree) as of `commit`; None where it had none."""
        return self.read_at(commit, Path(path).resolve().relative_to(self.work_tree.resolve()).as_posix())

    def read_at(self, commit: str, relative: str, limit: int | None = None) -> bytes | None:
        """The contents of the file `relative` (a path from the top of the work tree, never looked up on
        disk) as of `commit`; None where it had none, or a link or folder there, or one over `limit` bytes."""
        try:
            blob = self._repo.commit(commit).tree / relative
        except KeyError:
            return None
        if blob.type != "blob" or blob.mode not in (0o100644, 0o100755):
            return None  # a link is a blob too: its target's name is not the file
        if limit is not None and blob.size > limit:
            return None
        return bytes(blob.data_stream.read())

    def names_at(self, commit: str, folder: str) -> list[str]:
        """The names of the plain files directly in `folder` (from the top of the work tree; "" for the
        top) as of `commit`."""
        try:
            tree = self._repo.commit(commit).tree
            tree = tree / folder if folder else tree
        except KeyError:
            return []
        if tree.type != "tree":
            return []
        return [blob.name for blob in tree.blobs if blob.mode in (0o100644, 0o100755)]

    def relative(self, path: Path) -> str:
        """`path` (a folder of the work tree) from the top of the work tree, in git's notation."""
        relative = Path(path).resolve().relative_to(self.work_tree.resolve()).as_posix()
        return "" if relative == "." else relative

    def patch(self, paths: list[str]) -> str:
        """The uncommitted changes to `paths` as a patch `git apply` takes ('' when there are none)."""
        diff = str(self._repo.git.diff("--no-color", "--no-ext-diff", "--", *paths))
        return diff + "\n" if diff else ""  # GitPython strips the last newline, which git apply needs

    def is_shallow(self) -> bool:
        return self.ask("rev-parse", "--is-shallow-repository") == "true"

    def default_base(self) -> tuple[str, str]:
        """The branch a contributor's work goes into, and why: the current branch's upstream, else the
        remote's default branch (origin/HEAD), else main or master."""
        upstream = self.ask("rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{upstream}")
        if upstream:
            return upstream, "the upstream of the current branch"
        remote_head = self.ask("symbolic-ref", "--short", "refs/remotes/origin/HEAD")
        if remote_head:
            return remote_head, "the default branch of origin"
        for name in ("main", "master"):
            if self.ask("rev-parse", "--verify", "--quiet", f"refs/heads/{name}"):
                return name, "the local default branch"
        raise UsageError(
            "no default branch to compare with (no upstream, no origin/HEAD, no main or master): "
            "pass --base REF"
        )


def tracked(path: Path) -> bool:
    """Whether git tracks `path` or anything in it (False outside a repository or without git). Asked
    from the folder that holds it, so that a tracked link is found as the file it is to git, never
    followed to wherever it points."""
    holder = path.absolute().parent
    if not holder.is_dir():
        return False
    try:
        listed = subprocess.run(
            ["git", "--literal-pathspecs", "ls-files", "-z", "--", path.name],
            cwd=holder,
            capture_output=True,
            check=False,
            env={**os.environ, **extra} if (extra := _extra_environment()) else None,
        )
    except OSError:
        return False
    return listed.returncode == 0 and bool(listed.stdout.strip(b"\0"))
