"""Every git operation lvegit performs, in one place: opening a checkout, naming commits, the files a diff
changes, fetching missing history, reading files at a commit, patches, and whether git tracks a folder.

Each runs git through lvegit.base.processes, in the repository (git must run there) but with an
environment from the allow-list plus what git needs (GIT_ENVIRONMENT: its configuration, never a model
key or another secret of lvegit's environment), stdin /dev/null and no terminal to prompt on. A revision
given from outside (the Action's `base` input, --base, --head) is refused when it starts with '-' and
comes after --end-of-options, so that git never reads it as an option (`--upload-pack=...` runs a
program); paths come after `--`.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from lvegit.base import processes, settings
from lvegit.base.errors import UsageError

# What git reads from the environment: HOME and XDG_CONFIG_HOME for the user's configuration (a
# safe.directory entry, say), GIT_CONFIG_GLOBAL/SYSTEM/NOSYSTEM for where it is, and the configuration a
# job passes to git through GIT_CONFIG_COUNT with its GIT_CONFIG_KEY_<n>/GIT_CONFIG_VALUE_<n> pairs
# (actions/checkout and the Action's own safe.directory entry). Nothing that moves the repository
# (GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE: git finds the checkout from the folder it runs in).
GIT_ENVIRONMENT = (
    "HOME",
    "XDG_CONFIG_HOME",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_NOSYSTEM",
    "GIT_CONFIG_COUNT",
)
_CONFIG_PAIR = re.compile(r"GIT_CONFIG_(KEY|VALUE)_[0-9]+")
# What `git fetch` reads besides, to reach origin: proxies, certificate authorities, the SSH agent.
FETCH_ENVIRONMENT = (
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
    "GIT_SSL_CAINFO",
    "GIT_SSL_CAPATH",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "SSH_AUTH_SOCK",
    "GIT_SSH_COMMAND",
)
_PLAIN_FILE_MODES = ("100644", "100755")  # a link is a blob too: its target's name is not the file


@dataclass(frozen=True)
class FileChange:
    status: str  # git's letter: A added, D deleted, M modified, R renamed, C copied, T type changed
    path: str  # the path on the old side (for an added file, its path)
    new_path: str | None = None  # for a rename or copy, the path on the new side


@dataclass(frozen=True)
class _Entry:
    """One entry of `git ls-tree --long`."""

    mode: str
    kind: str  # blob, tree or commit (a submodule's gitlink)
    name: str  # its object
    size: int | None  # None for a tree or a gitlink
    path: str


def git_passing() -> list[str]:
    """The names of this process's variables that git reads (see GIT_ENVIRONMENT)."""
    return [*GIT_ENVIRONMENT, *(name for name in os.environ if _CONFIG_PAIR.fullmatch(name))]


def git_environment(fetching: bool = False) -> dict[str, str]:
    """The environment every git command runs with (see GIT_ENVIRONMENT), with the Action's extra
    configuration from this command's settings, git's messages in English (some are parsed), and no
    prompt for a password: git fails instead of waiting for a terminal it does not have."""
    passing = git_passing() + (list(FETCH_ENVIRONMENT) if fetching else [])
    extra = {"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "LANGUAGE": "C"}
    return processes.environment(passing, {**extra, **dict(settings.current().git_environment)})


# Configuration on every git command, over whatever the repository's configuration says. A pull request can
# commit a folder that looks like a bare repository (HEAD, objects/, refs/, a config with core.fsmonitor):
# git run inside it (lvegit asks git about files of the LVE folders) would take it for the repository and run
# its fsmonitor or hooks. Only a repository found by its .git is used; no hook or fsmonitor runs either way.
GIT_SAFETY = (
    "-c",
    "safe.bareRepository=explicit",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
)


def revision(ref: str) -> str:
    """`ref` as given from outside, refused where git would read it as an option."""
    if not ref or ref.startswith("-"):
        raise UsageError(f"'{ref}' is not a git revision (a revision never starts with '-')")
    return ref


def _git(
    folder: Path, *args: str, input: bytes | None = None, fetching: bool = False
) -> subprocess.CompletedProcess[bytes]:
    try:
        return processes.run(
            ["git", *GIT_SAFETY, *args], git_environment(fetching), cwd=str(folder), input=input
        )
    except OSError as exc:
        raise UsageError(f"cannot run git: {exc}") from None


def _text(output: bytes) -> str:
    """git's output as text, without its last newline."""
    return output.decode("utf-8", "surrogateescape").removesuffix("\n")


class GitCheckout:
    """A git repository with a work tree, found from any folder inside it."""

    def __init__(self, folder: Path) -> None:
        found = _git(folder, "rev-parse", "--show-toplevel") if Path(folder).is_dir() else None
        if found is None or found.returncode != 0 or not found.stdout.strip():
            raise UsageError(f"{folder} is not inside a git repository")
        self.work_tree = Path(os.fsdecode(found.stdout.removesuffix(b"\n")))

    def _run(self, *args: str, input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        return _git(self.work_tree, *args, input=input)

    def commit(self, ref: str) -> str:
        """The full hash of the commit `ref` names."""
        found = self._run(
            "rev-parse", "--verify", "--quiet", "--end-of-options", f"{revision(ref)}^{{commit}}"
        )
        if found.returncode != 0:
            raise UsageError(f"unknown git revision '{ref}' (is the history fetched? try git fetch)")
        return _text(found.stdout)

    def has_commit(self, ref: str) -> bool:
        return self._run("cat-file", "-e", "--end-of-options", f"{revision(ref)}^{{commit}}").returncode == 0

    def merge_base(self, base: str, head: str) -> str | None:
        """Where `head` left `base`; None when the two have no common history."""
        found = self._run("merge-base", "--end-of-options", revision(base), revision(head))
        return _text(found.stdout) if found.returncode == 0 and found.stdout.strip() else None

    def ask(self, *args: str) -> str | None:
        """The output of a git command, or None when git answers no (fails): the callers ask questions
        such as 'is there an upstream?'."""
        found = self._run(*args)
        return _text(found.stdout) if found.returncode == 0 else None

    def run(self, *args: str, failure: str, fetching: bool = False) -> str:
        """The output of a git command that must succeed; a UsageError starting with `failure` if not.
        `fetching`: it talks to a remote (its environment has what reaches one)."""
        found = _git(self.work_tree, *args, fetching=fetching)
        if found.returncode != 0:
            raise UsageError(f"{failure}: {_text(found.stderr).strip()}")
        return _text(found.stdout)

    def changed_files(self, since: str, head: str | None) -> list[FileChange]:
        """The files changed from commit `since` to commit `head`, renames detected; head None: to the
        work tree, with staged, unstaged and untracked (not ignored) files."""
        revisions = [revision(since)] if head is None else [revision(since), revision(head)]
        output = self.run(
            "diff",
            "--name-status",
            "-z",
            "-M",
            "--no-color",
            "--no-ext-diff",
            "--end-of-options",
            *revisions,
            "--",
            failure="cannot list the changed files",
        )
        fields = output.split("\0")
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

    def _entries(self, commit: str, paths: list[str]) -> list[_Entry]:
        """`git ls-tree --long` of `paths` (taken literally, from the top of the work tree) at `commit`."""
        found = self._run(
            "--literal-pathspecs",
            "ls-tree",
            "-z",
            "--long",
            "--full-tree",
            "--end-of-options",
            revision(commit),
            "--",
            *paths,
        )
        entries = []
        for record in _text(found.stdout).split("\0") if found.returncode == 0 else []:
            if record:
                description, path = record.split("\t", 1)
                mode, kind, name, size = description.split()
                entries.append(_Entry(mode, kind, name, int(size) if size.isdigit() else None, path))
        return entries

    def files_in(self, commit: str, paths: list[str]) -> list[str]:
        """Which of `paths` (taken literally, relative to the work tree) exist in `commit`, in one call."""
        return [entry.path for entry in self._entries(commit, paths)]

    def untracked_files(self) -> list[str]:
        listed = self.run("ls-files", "-z", "--others", "--exclude-standard", failure="cannot list files")
        return [path for path in listed.split("\0") if path]

    def kind_at(self, commit: str, relative: str) -> str | None:
        """What `relative` (from the top of the work tree) is in `commit`: 'file', 'folder', 'link',
        'submodule' (a gitlink), or None where there is nothing."""
        found = self._entries(commit, [relative])
        if not found:
            return None
        kinds = {"040000": "folder", "120000": "link", "160000": "submodule"}
        return kinds.get(found[0].mode, "file")

    def read(self, commit: str, path: Path) -> bytes | None:
        """The contents of the file at `path` (in the work tree) as of `commit`; None where it had none."""
        return self.read_at(commit, Path(path).resolve().relative_to(self.work_tree.resolve()).as_posix())

    def read_at(self, commit: str, relative: str, limit: int | None = None) -> bytes | None:
        """The contents of the file `relative` (a path from the top of the work tree, never looked up on
        disk) as of `commit`; None where it had none, or a link or folder there, or one over `limit` bytes."""
        return self.read_all_at(commit, [relative], limit).get(relative)

    def read_all_at(self, commit: str, paths: list[str], limit: int | None = None) -> dict[str, bytes | None]:
        """read_at of each of `paths`, with two git commands in all."""
        wanted = {
            entry.path: entry
            for entry in self._entries(commit, paths)
            if entry.kind == "blob" and entry.mode in _PLAIN_FILE_MODES
            if limit is None or (entry.size is not None and entry.size <= limit)
        }
        read: dict[str, bytes | None] = dict.fromkeys(paths)
        if not wanted:
            return read
        names = "".join(f"{entry.name}\n" for entry in wanted.values()).encode()
        found = self._run("cat-file", "--batch", input=names)
        output, position = found.stdout, 0
        for path, entry in wanted.items():
            header_end = output.index(b"\n", position)
            position = header_end + 1 + entry.size if entry.size is not None else header_end + 1
            read[path] = output[header_end + 1 : position]
            position += 1  # the newline after each object
        return read

    def names_at(self, commit: str, folder: str) -> list[str]:
        """The names of the plain files directly in `folder` (from the top of the work tree; "" for the
        top) as of `commit`."""
        entries = self._entries(commit, [f"{folder}/"] if folder else [])  # nothing for a link or gitlink
        return [
            entry.path.rsplit("/", 1)[-1]
            for entry in entries
            if entry.kind == "blob" and entry.mode in _PLAIN_FILE_MODES
        ]

    def relative(self, path: Path) -> str:
        """`path` (a folder of the work tree) from the top of the work tree, in git's notation."""
        relative = Path(path).resolve().relative_to(self.work_tree.resolve()).as_posix()
        return "" if relative == "." else relative

    def patch(self, paths: list[str]) -> str:
        """The uncommitted changes to `paths` as a patch `git apply` takes ('' when there are none)."""
        found = self._run("diff", "--no-color", "--no-ext-diff", "--", *paths)
        return found.stdout.decode("utf-8", "surrogateescape") if found.returncode == 0 else ""

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
        listed = _git(holder, "--literal-pathspecs", "ls-files", "-z", "--", path.name)
    except UsageError:
        return False
    return listed.returncode == 0 and bool(listed.stdout.strip(b"\0"))
