"""Each worker apart from the launcher, bubblewrap and its sibling workers, where namespaces are allowed:
its own user and mount namespaces, made in the worker right after the launcher forked it.

bubblewrap gives the launcher one view, shared by every worker it forks: one scratch folder holding every
worker's, one /proc showing every process of the view (bubblewrap's own pid 1 too); nothing else in it is
writable (lvegit.sandbox.bwrap: no /tmp or /dev/shm to share). Where Landlock holds, it keeps a worker out
of both; where it does not (a kernel without it), workers of an unprivileged user share a uid, and a
worker read and rewrote a sibling's files and opened bubblewrap's /proc/1/mem read-write. Here a worker
gets:

- a user namespace of its own, mapping only its own uid and gid: every process outside it (the launcher,
  bubblewrap, a sibling) is in another user namespace, where it holds no capability, so the kernel lets
  it neither ptrace them nor open their /proc files that need it (mem, environ, fd), whatever their uid;
- a mount namespace of its own (owned by that user namespace, so nothing propagates back), in which the
  launcher's scratch folder is covered, read-only, but for the worker's own folder, bound back, and /proc
  shows its own process only.

The capabilities the new user namespace gave it are dropped afterwards (lvegit.sandbox.privileges reads
them back from the kernel).
"""

from __future__ import annotations

import ctypes
import os

from lvegit.sandbox import privileges

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
COVER_FLAGS = MS_NOSUID | MS_NODEV | MS_NOEXEC


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


def _mount(source: str | None, target: str, kind: str | None, flags: int, data: str | None = None) -> None:
    encoded = [value.encode() if value is not None else None for value in (source, target, kind, data)]
    _check(_libc().mount(encoded[0], encoded[1], encoded[2], flags, encoded[3]), f"mount on {target}")


def _write(path: str, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)


def _own_user_namespace() -> None:
    """A user namespace (and a mount namespace it owns) mapping only this process's uid and gid."""
    uid, gid = os.geteuid(), os.getegid()
    _check(_libc().unshare(CLONE_NEWUSER | CLONE_NEWNS), "unshare")
    # Not dumpable (the launcher keeps itself so, and the new namespace makes it so), its /proc files are
    # root's, whom the new namespace does not map: its own maps would be out of its reach. Meanwhile only
    # lvegit's own processes (the launcher, bubblewrap: they hold capabilities over the new namespace)
    # could attach to it; it is made undumpable again at once.
    privileges.set_dumpable(True)
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/setgroups", "deny")  # the kernel's condition for mapping a gid unprivileged
    _write("/proc/self/gid_map", f"{gid} {gid} 1")
    privileges.set_dumpable(False)
    _mount(None, "/", None, MS_REC | MS_PRIVATE)


def _cover(folder: str, mode: str) -> None:
    """An empty tmpfs over `folder` (a few inodes: only mount points go in it), until `_close`."""
    _mount("tmpfs", folder, "tmpfs", COVER_FLAGS, f"mode={mode},size=16k,nr_inodes=16")


def _close(folder: str) -> None:
    _mount(None, folder, None, MS_REMOUNT | MS_RDONLY | COVER_FLAGS)


def _own_proc() -> None:
    """/proc covered by an empty read-only folder but for `self`: the worker's own /proc/<pid>, bound from
    the /proc it covers (through the working directory, which stays in the covered one)."""
    os.chdir(f"/proc/{os.getpid()}")
    _cover("/proc", "0555")
    os.mkdir("/proc/self")
    _mount(".", "/proc/self", None, MS_BIND)
    _close("/proc")


def separate(workdir: str) -> None:
    """Put this worker (single-threaded, just forked, before Landlock and seccomp) apart: see the module.
    `workdir`: its own scratch folder, the only one of the launcher's scratch folder (its parent) it
    keeps. Raises OSError where the kernel refuses (user namespaces disabled or restricted)."""
    _own_user_namespace()
    _own_proc()
    os.chdir(workdir)  # the folder bound back below, once covered
    scratch = os.path.dirname(workdir)
    _cover(scratch, "0711")
    os.mkdir(workdir, mode=0o700)
    _mount(".", workdir, None, MS_BIND)
    _close(scratch)
    os.chdir(workdir)
