"""Confinement of the process that runs contributed checker code (Linux; best effort elsewhere).

Applied by the worker to itself before it loads any contributed code, strongest first:
- namespaces: a private mount namespace in which every mount is read-only and the working directory,
  /tmp, /var/tmp and /dev/shm are fresh tmpfs (the Python installation stays visible, read-only, where
  one of them held it); an empty network namespace; a PID namespace with its own
  /proc, so no other process (and no other process's environment) is visible. Needs root or unprivileged
  user namespaces; without them the worker still runs, with the weaker layers below;
- seccomp: fork, vfork, process-creating clone, execve, socket, ptrace and namespace calls fail (threads
  still work), so contributed code can neither start programs nor open network connections;
- resource limits: CPU seconds, address space, file size, open files, no core dumps.
Each layer reports what it did; `describe` turns that into one line for users.
"""

from __future__ import annotations

import ctypes
import errno
import os
import resource
from collections.abc import Callable
from dataclasses import dataclass

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
CLONE_THREAD = 0x00010000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_SECCOMP = 22
PR_SET_NO_NEW_PRIVS = 38
SECCOMP_MODE_FILTER = 2
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
SCRATCH_DIRS = ("/tmp", "/var/tmp", "/dev/shm")

# Per architecture: (audit arch, syscalls that fail with EPERM, clone, clone3).
_SYSCALLS = {
    "x86_64": (
        0xC000003E,
        # fork vfork execve execveat socket socketpair ptrace process_vm_readv/writev unshare setns mount
        (57, 58, 59, 322, 41, 53, 101, 310, 311, 272, 308, 165),
        56,
        435,
    ),
    "aarch64": (
        0xC00000B7,
        # execve execveat socket socketpair ptrace process_vm_readv/writev unshare setns mount
        (221, 281, 198, 199, 117, 270, 271, 97, 268, 40),
        220,
        435,
    ),
}


def size_text(count: int) -> str:
    """Bytes for people: 2 GiB, 16 MiB, 512 KiB."""
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if count >= size:
            return f"{count / size:.3g} {unit}"
    return f"{count} bytes"


@dataclass(frozen=True)
class Limits:
    cpu_seconds: int = 120
    memory_bytes: int = 2 * 1024**3
    file_bytes: int = 16 * 1024**2
    open_files: int = 256
    scratch_bytes: int = 64 * 1024**2

    @property
    def memory(self) -> str:
        return f"memory limit of {size_text(self.memory_bytes)}"

    @property
    def cpu(self) -> str:
        return f"CPU time limit of {self.cpu_seconds} s"

    @property
    def file_size(self) -> str:
        return f"file size limit of {size_text(self.file_bytes)}"

    @property
    def files(self) -> str:
        return f"limit of {self.open_files} open files"


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _call(result: int) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


def set_limits(limits: Limits) -> str:
    applied = []
    described: tuple[tuple[str, int, Callable[[int], str]], ...] = (
        ("RLIMIT_CPU", limits.cpu_seconds, lambda value: f"CPU {value} s"),
        ("RLIMIT_AS", limits.memory_bytes, lambda value: f"memory {size_text(value)}"),
        ("RLIMIT_FSIZE", limits.file_bytes, lambda value: f"file size {size_text(value)}"),
        ("RLIMIT_NOFILE", limits.open_files, lambda value: f"{value} open files"),
        ("RLIMIT_CORE", 0, lambda value: "no core dumps"),
    )
    for name, value, describe in described:
        kind = getattr(resource, name)
        _soft, hard = resource.getrlimit(kind)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        # CPU: the soft limit sends SIGXCPU, which ends the worker in a way its parent can name; equal
        # limits would send SIGKILL instead.
        ceiling = (
            value + 1 if name == "RLIMIT_CPU" and (hard == resource.RLIM_INFINITY or value < hard) else value
        )
        resource.setrlimit(kind, (value, ceiling))
        applied.append(describe(value))
    return "limits: " + ", ".join(applied)


def _write(path: str, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)


def _mount_points() -> list[tuple[str, str]]:
    """(mount point, per-mount options) from /proc/self/mountinfo, parents before children."""
    points = []
    with open("/proc/self/mountinfo") as handle:
        for line in handle:
            fields = line.split()
            points.append((fields[4].encode().decode("unicode_escape"), fields[5]))
    return points


def _read_only_everywhere(libc: ctypes.CDLL) -> None:
    for point, options in _mount_points():
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY
        for option, flag in (("nosuid", MS_NOSUID), ("nodev", MS_NODEV), ("noexec", MS_NOEXEC)):
            if option in options.split(","):
                flags |= flag
        libc.mount(None, point.encode(), None, flags, None)  # some (e.g. inside /proc) refuse: fine


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _paths_to_keep(keep: list[str], covered: list[str]) -> list[str]:
    """The paths of `keep` that a fresh scratch mount would hide, without those inside another kept one
    and without any that would uncover a scratch mount (a venv is kept, /tmp as a whole is not)."""
    hidden = {
        path
        for path in map(os.path.realpath, keep)
        if os.path.exists(path)
        and any(_under(path, mount) for mount in covered)
        and not any(_under(mount, path) for mount in covered)
    }
    return sorted(p for p in hidden if not any(p != q and _under(p, q) for q in hidden))


def _bind_read_only(libc: ctypes.CDLL, descriptor: int, target: str, source_flags: int) -> None:
    """Mount what `descriptor` (opened before the scratch mount hid it) at `target`, read-only."""
    if os.path.isdir(f"/proc/self/fd/{descriptor}"):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))  # an empty file as the mount point
    _call(libc.mount(f"/proc/self/fd/{descriptor}".encode(), target.encode(), None, MS_BIND | MS_REC, None))
    # A user namespace may not clear nosuid, nodev or noexec that the source mount had: keep them.
    kept = source_flags & (MS_NOSUID | MS_NODEV | MS_NOEXEC)
    libc.mount(None, target.encode(), None, MS_REMOUNT | MS_BIND | MS_RDONLY | kept, None)
    if not os.statvfs(target).f_flag & os.ST_RDONLY:
        raise OSError(errno.EPERM, f"cannot make {target} read-only")


def enter_namespaces(workdir: str, limits: Limits, keep: list[str] | None = None) -> bool:
    """Private mount, network and PID namespaces with a read-only filesystem and fresh scratch space.

    `keep`: paths that must stay visible (read-only) even where a scratch mount covers them, such as a
    Python installation or virtual environment under /tmp.
    Returns True when the caller must fork: the PID namespace applies to children only, and the child
    (pid 1 there) should mount /proc with `finish_pid_namespace`. False when namespaces are unavailable.
    """
    libc = _libc()
    flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID
    if libc.unshare(flags) != 0:
        uid, gid = os.getuid(), os.getgid()
        if libc.unshare(flags | CLONE_NEWUSER) != 0:
            return False
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"0 {uid} 1")
        _write("/proc/self/gid_map", f"0 {gid} 1")
    _call(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None))
    _read_only_everywhere(libc)
    scratch = [d for d in SCRATCH_DIRS if os.path.isdir(d)]
    if not any(_under(workdir, d) for d in scratch):
        scratch.append(workdir)
    kept = {
        path: (os.open(path, os.O_PATH | os.O_CLOEXEC), os.statvfs(path).f_flag)
        for path in _paths_to_keep(keep or [], scratch)
    }
    options = f"size={limits.scratch_bytes},mode=1777".encode()
    for mount_point in scratch:
        _call(libc.mount(b"tmpfs", mount_point.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options))
    os.makedirs(workdir, exist_ok=True)  # recreated inside the fresh scratch tmpfs
    for path, (descriptor, flags) in kept.items():
        _bind_read_only(libc, descriptor, path, flags)
        os.close(descriptor)
    os.chdir(workdir)  # now on a fresh tmpfs
    return True


def finish_pid_namespace() -> None:
    """In pid 1 of the new namespace: a /proc that shows only this namespace's processes."""
    libc = _libc()
    _call(libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None))


def hide_environment_from_same_user() -> None:
    """For the process that holds secrets: other processes of the same (non-root) user, a worker without
    namespaces among them, can no longer read its /proc/<pid>/environ or attach to it."""
    if os.uname().sysname == "Linux":
        _libc().prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


def allow_inspection() -> None:
    """Undo hide_environment_from_same_user in a forked child, as exec would: the kernel makes the /proc
    files of a process that hides itself root's, which a user namespace's set-up must write."""
    if os.uname().sysname == "Linux":
        _libc().prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)


def die_with_parent() -> None:
    _libc().prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0)


class _SockFilter(ctypes.Structure):
    _fields_ = (
        ("code", ctypes.c_ushort),
        ("jt", ctypes.c_ubyte),
        ("jf", ctypes.c_ubyte),
        ("k", ctypes.c_uint),
    )


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter)))


def seccomp_program(arch: str) -> list[tuple[int, int, int, int]]:
    """The BPF filter as (code, jump if true, jump if false, k) instructions."""
    audit_arch, denied, clone, clone3 = _SYSCALLS[arch]
    load, jump_eq, jump_ge, jump_set, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    # Instructions with symbolic jump targets, resolved to relative offsets below.
    code: list[tuple[int, int, str | int, str | int]] = [
        (load, 4, 0, 0),  # seccomp_data.arch
        (jump_eq, audit_arch, 0, "deny"),
        (load, 0, 0, 0),  # seccomp_data.nr
        (jump_ge, 0x40000000, "deny", 0),  # x32 system calls
        *((jump_eq, number, "deny", 0) for number in denied),
        (jump_eq, clone3, "nosys", 0),  # glibc then falls back to clone, whose flags can be read
        (jump_eq, clone, "clone", 0),
    ]
    labels = {"allow": len(code)}
    code.append((ret, SECCOMP_RET_ALLOW, 0, 0))
    labels["clone"] = len(code)
    # clone flags: threads only (BPF jumps forward only, hence a second allow)
    code += [(load, 16, 0, 0), (jump_set, CLONE_THREAD, 0, "deny"), (ret, SECCOMP_RET_ALLOW, 0, 0)]
    labels["deny"] = len(code)
    code.append((ret, SECCOMP_RET_ERRNO | errno.EPERM, 0, 0))
    labels["nosys"] = len(code)
    code.append((ret, SECCOMP_RET_ERRNO | errno.ENOSYS, 0, 0))

    def offset(target: str | int, index: int) -> int:
        return labels[target] - index - 1 if isinstance(target, str) else target

    return [(op, offset(t, i), offset(f, i), k) for i, (op, k, t, f) in enumerate(code)]


def apply_seccomp() -> str:
    arch = os.uname().machine
    if arch not in _SYSCALLS:
        return f"seccomp unavailable on {arch}"
    program = seccomp_program(arch)
    filters = (_SockFilter * len(program))(*(_SockFilter(*instruction) for instruction in program))
    fprog = _SockFprog(len(program), filters)
    libc = _libc()
    try:
        _call(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
        _call(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0))
    except OSError as exc:
        return f"seccomp unavailable ({exc.strerror})"
    return "seccomp: no processes, programs or sockets"
