"""Confinement of the process that runs contributed checker code (Linux; best effort elsewhere).

Applied by the worker to itself before it loads any contributed code, strongest first:
- namespaces: a private mount namespace in which every mount is read-only, the working directory, /tmp,
  /var/tmp and /dev/shm are fresh tmpfs, and the homes (/root, /home, the user's), the repository's .git
  and the CI runner's temporary folder are hidden under empty ones (the Python installation, lvegit and
  the hub cache stay visible, read-only, wherever they live); empty network, UTS and IPC namespaces; a PID
  namespace with its own read-only /proc, so no other process (and no other process's environment) is
  visible. Needs root or unprivileged user namespaces; without them the worker still runs, with the
  layers below;
- privileges: every capability dropped for good (bounding, ambient, permitted and effective sets), and a
  worker started as root becomes a uid of its own (WORKER_UID_BASE + its pid), so that it owns no file,
  can neither unmount nor remount anything, and its thread limit counts its own threads only;
- seccomp: fork, vfork, process-creating clone, execve, socket, ptrace, namespace and mount calls fail
  (threads still work), so contributed code can neither start programs nor open network connections;
- resource limits: CPU seconds, address space (every thread's: no process can be started), file size,
  open files, threads, no core dumps.
Each layer reports what it did; `describe` turns that into one line for users.
"""

from __future__ import annotations

import ctypes
import enum
import errno
import os
import resource
from collections.abc import Callable
from dataclasses import dataclass

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
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
PR_CAPBSET_DROP = 24
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
LINUX_CAPABILITY_VERSION_3 = 0x20080522
# A worker started as root runs as this plus its pid: a uid no file and no other process has.
WORKER_UID_BASE = 2_100_000_000
SECCOMP_MODE_FILTER = 2
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
SCRATCH_DIRS = ("/tmp", "/var/tmp", "/dev/shm")

# The new mount API, numbered alike on every architecture: open_tree move_mount fsopen fsconfig fsmount
# fspick mount_setattr open_tree_attr.
_MOUNT_API = (428, 429, 430, 431, 432, 433, 442, 467)
# Per architecture: (audit arch, syscalls that fail with EPERM, clone, clone3).
_SYSCALLS = {
    "x86_64": (
        0xC000003E,
        # fork vfork execve execveat socket socketpair ptrace process_vm_readv/writev unshare setns mount
        # umount2 pivot_root chroot sethostname setdomainname bpf perf_event_open keyctl add_key
        # request_key userfaultfd
        (
            *(57, 58, 59, 322, 41, 53, 101, 310, 311, 272, 308, 165, 166, 155, 161, 170, 171, 321, 298),
            *(250, 248, 249, 323, *_MOUNT_API),
        ),
        56,
        435,
    ),
    "aarch64": (
        0xC00000B7,
        # execve execveat socket socketpair ptrace process_vm_readv/writev unshare setns mount umount2
        # pivot_root chroot sethostname setdomainname bpf perf_event_open keyctl add_key request_key
        # userfaultfd
        (
            *(221, 281, 198, 199, 117, 270, 271, 97, 268, 40, 39, 41, 51, 161, 162, 280, 241, 219, 217),
            *(218, 282, *_MOUNT_API),
        ),
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
    threads: int = 128
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

    @property
    def thread_count(self) -> str:
        return f"limit of {self.threads} threads"


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _call(result: int) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


def set_limits(limits: Limits, own_uid: bool = True) -> str:
    """`own_uid`: whether the worker's uid (in its user namespace, or a uid of its own) has no other
    process: RLIMIT_NPROC counts every thread of that uid, so it limits threads only then."""
    applied = []
    described: tuple[tuple[str, int, Callable[[int], str]], ...] = (
        ("RLIMIT_CPU", limits.cpu_seconds, lambda value: f"CPU {value} s"),
        ("RLIMIT_AS", limits.memory_bytes, lambda value: f"memory {size_text(value)}"),
        ("RLIMIT_FSIZE", limits.file_bytes, lambda value: f"file size {size_text(value)}"),
        ("RLIMIT_NOFILE", limits.open_files, lambda value: f"{value} open files"),
        ("RLIMIT_CORE", 0, lambda value: "no core dumps"),
        *((("RLIMIT_NPROC", limits.threads, lambda value: f"{value} threads"),) if own_uid else ()),
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


def _paths_to_keep(keep: list[str], covered: list[str], scratch: list[str]) -> list[str]:
    """The paths of `keep` that a mount over `covered` would hide, without those inside another kept one
    and without any that would uncover a scratch mount (a venv is kept, /tmp as a whole is not)."""
    hidden = {
        path
        for path in map(os.path.realpath, keep)
        if os.path.exists(path)
        and any(_under(path, mount) for mount in covered)
        and not any(_under(mount, path) for mount in scratch)
    }
    return sorted(p for p in hidden if not any(p != q and _under(p, q) for q in hidden))


def _outermost(paths: list[str]) -> list[str]:
    return [p for p in paths if not any(p != q and _under(p, q) for q in paths)]


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


def _hide(libc: ctypes.CDLL, path: str) -> None:
    """Lay an empty, read-only tmpfs over a folder (an empty file over a file)."""
    if os.path.isdir(path):
        options = b"size=4k,mode=0755"
        _call(libc.mount(b"tmpfs", path.encode(), b"tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, options))
        # Read-only only once the folders that kept paths are bound onto exist: see enter_namespaces.
    else:
        _call(libc.mount(b"/dev/null", path.encode(), None, MS_BIND, None))
        libc.mount(None, path.encode(), None, MS_REMOUNT | MS_BIND | MS_RDONLY, None)


class Isolation(enum.Enum):
    """How a worker was isolated: NONE (namespaces unavailable), ROOT (namespaces entered as the machine's
    root: it must then become a uid of its own), USER (a user namespace whose root is the invoking user)."""

    NONE = "none"
    ROOT = "root"
    USER = "user"


def become(uid: int) -> None:
    """Root gives itself up for `uid` (its group too, no other groups), keeping its scratch folder."""
    os.chown(os.getcwd(), uid, uid)
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    allow_inspection()  # changing uid made the process undumpable: its own /proc files became root's
    die_with_parent()  # and cleared the parent-death signal


def enter_namespaces(
    workdir: str, limits: Limits, keep: list[str] | None = None, hide: list[str] | None = None
) -> Isolation:
    """Private mount, network, UTS, IPC and PID namespaces with a read-only filesystem, fresh scratch space
    and the `hide` paths (homes, a repository's .git) covered by empty folders.

    `keep`: paths that must stay visible (read-only) even where a scratch or hiding mount covers them,
    such as a Python installation or virtual environment under /tmp or under a home; a hidden path inside
    a kept one is hidden all the same.
    Root without CAP_SYS_ADMIN creates no user namespace: mapped to root's own uid, the namespace's root
    would own every file root owns; such a worker becomes a uid of its own instead (drop_privileges).
    Returns how (an Isolation value): ROOT or USER when the caller must fork (the PID namespace applies to
    children only, and the child, pid 1 there, should mount /proc with `finish_pid_namespace`); NONE when
    namespaces are unavailable.
    """
    libc = _libc()
    flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWUTS | CLONE_NEWIPC
    isolation = Isolation.ROOT
    if libc.unshare(flags) != 0:
        outside_uid, outside_gid = os.getuid(), os.getgid()
        if outside_uid == 0 or libc.unshare(flags | CLONE_NEWUSER) != 0:
            return Isolation.NONE
        isolation = Isolation.USER
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"0 {outside_uid} 1")
        _write("/proc/self/gid_map", f"0 {outside_gid} 1")
    _call(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None))
    _read_only_everywhere(libc)
    scratch = [d for d in SCRATCH_DIRS if os.path.isdir(d)]
    if not any(_under(workdir, d) for d in scratch):
        scratch.append(workdir)
    hidden = _outermost(
        sorted(
            {
                os.path.realpath(path)
                for path in hide or []
                if os.path.lexists(path) and not any(_under(os.path.realpath(path), d) for d in scratch)
            }
        )
    )
    kept_paths = _paths_to_keep(keep or [], scratch + hidden, scratch)
    kept = {path: (os.open(path, os.O_PATH | os.O_CLOEXEC), os.statvfs(path).f_flag) for path in kept_paths}
    # A hidden path inside a kept one (a checkout's .git inside the folder lvegit is imported from) is
    # hidden again once the kept folder is bound back.
    early = [path for path in hidden if not any(_under(path, k) for k in kept_paths)]
    late = [path for path in hidden if path not in early]
    options = f"size={limits.scratch_bytes},mode=1777".encode()
    for mount_point in scratch:
        _call(libc.mount(b"tmpfs", mount_point.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options))
    for path in early:
        _hide(libc, path)
    os.makedirs(workdir, exist_ok=True)  # recreated inside the fresh scratch tmpfs
    for path, (descriptor, flags) in kept.items():
        _bind_read_only(libc, descriptor, path, flags)
        os.close(descriptor)
    for path in late:
        _hide(libc, path)
    for path in hidden:
        if os.path.isdir(path):
            _call(libc.mount(None, path.encode(), None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, None))
    os.chdir(workdir)  # now on a fresh tmpfs
    return isolation


def finish_pid_namespace() -> None:
    """In pid 1 of the new namespace: a read-only /proc that shows only this namespace's processes."""
    libc = _libc()
    _call(libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, None))


class _CapHeader(ctypes.Structure):
    _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))


class _CapData(ctypes.Structure):
    _fields_ = (
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    )


def worker_uid(pid: int) -> int:
    return WORKER_UID_BASE + pid


def drop_privileges(isolation: Isolation, uid: int) -> tuple[str, bool]:
    """Give up every capability for good; a worker that is the machine's root (not the root of a user
    namespace of its own) becomes `uid` first. Returns what it did and whether the worker's uid is its
    own (no other process has it). Raises OSError when a capability is left."""
    libc = _libc()
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    with open("/proc/sys/kernel/cap_last_cap") as handle:
        last = int(handle.read())
    for capability in range(last + 1):
        libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0)  # refused without CAP_SETPCAP: none to drop then
    own_uid = isolation == Isolation.USER
    if isolation != Isolation.USER and os.getuid() == 0:
        become(uid)
        own_uid = True
    header = _CapHeader(LINUX_CAPABILITY_VERSION_3, 0)
    _call(libc.capset(ctypes.byref(header), ctypes.byref((_CapData * 2)())))
    if held_capabilities():
        raise OSError(errno.EPERM, "capabilities are left after dropping them")
    who = {
        Isolation.USER: "the root of a user namespace of its own, the invoking user outside it",
        Isolation.ROOT: f"uid {os.getuid()}",
        Isolation.NONE: f"uid {os.getuid()}" if own_uid else "the invoking user's uid",
    }[isolation]
    return f"privileges: no capabilities, {who}", own_uid


def held_capabilities() -> bool:
    with open("/proc/self/status") as handle:
        fields = dict(line.split(":\t", 1) for line in handle if line.startswith("Cap"))
    return any(int(fields.get(name, "0"), 16) for name in ("CapEff", "CapPrm", "CapAmb"))


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
