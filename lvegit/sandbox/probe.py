"""What contributed code could do, tried from inside a real worker: `lvegit sandbox` and the tests ask a
worker for this (the "probe" op) and report what held. Each attempt returns "blocked: <error>" or what it
achieved; `targets` names what lvegit set up outside: a file only its user may read (and a link to it), a
listening TCP port and unix socket, lvegit's pid, a folder outside the worker's scratch, and what a sibling
worker of the same launcher left (the "plant" op, run first in that sibling: an honest checker's files in
every folder it could write, and its pid)."""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import resource
import socket
import subprocess  # imported by the launcher: a worker may be unable to import more
from collections.abc import Callable
from typing import Any

PROBES = (
    "secret_file",
    "write_outside",
    "tcp_connect",
    "unix_connect",
    "abstract_socket",
    "io_uring",
    "terminal",
    "signal_lvegit",
    "signal_owner",
    "limit_lvegit",
    "priority_lvegit",
    "priority_user",
    "chmod_outside",
    "set_id_file",
    "process",
    "program",
    "proc_environ",
    "groups",
    "capabilities",
    "uid",
    "sibling_read",
    "sibling_rewrite",
    "proc_pid1_mem",
    "proc_sibling",
    "proc_processes",
    "xattr_secret",
    "stat_secret",
    "readlink_secret",
    "proc_stat",
    "unseen_space",
)
# What landlock mode (no namespaces) cannot hide, stated in docs/security.md: Landlock does not cover a
# path's lookup, so a worker learns whether a path it names exists, with its size, owner and times (a
# secret's, a pid's under /proc: which processes run, and whose) and where a link points, though it can
# neither open nor list it; seccomp cannot tell one path from another.
LANDLOCK_LIMITS = ("stat_secret", "readlink_secret", "proc_stat")
# Where a sibling worker (an honest checker, see `plant`) writes what it keeps: its scratch folder, /tmp,
# /dev/shm, the launcher's scratch folder above its own, the view's root and /dev.
PLANTED = ("{scratch}", "/tmp", "/dev/shm", "{scratch}/..", "/", "/dev")


def _outcome(action: Callable[[], object]) -> str:
    try:
        result = action()
    except Exception as exc:
        return f"blocked: {type(exc).__name__}: {exc}"[:200]
    return f"done: {result}"[:200]


def _connect(family: socket.AddressFamily, address: tuple[str, int] | str) -> str:
    with socket.socket(family, socket.SOCK_STREAM) as connection:
        connection.settimeout(5)
        connection.connect(address)
    return "connected"


def _io_uring() -> str:
    libc = ctypes.CDLL(None, use_errno=True)
    params = ctypes.create_string_buffer(120)
    descriptor = libc.syscall(425, 8, params)  # io_uring_setup(8 entries): x86_64 and aarch64 alike
    if descriptor < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    os.close(descriptor)
    return "ring created"


def _read(path: str) -> str:
    with open(path) as handle:
        return handle.read()[:20]


def _write_outside(folder: str) -> str:
    path = os.path.join(folder, "written-by-a-worker")
    with open(path, "w") as handle:
        handle.write("escaped")
    return path


def _fork() -> str:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return "forked"


def _program() -> str:
    return f"exit code {subprocess.run(['/usr/bin/true'], check=False).returncode}"


def _proc_environ(pid: int) -> str:
    with open(f"/proc/{pid}/environ", "rb") as handle:
        return f"{len(handle.read())} bytes"


def _capabilities() -> str:
    """From the kernel (capget): /proc/self/status is out of a worker's reach."""
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable: twice 32 bits
    if ctypes.CDLL(None, use_errno=True).capget(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capget failed")
    if any(data):
        return f"held: {[hex(value) for value in data]}"
    raise PermissionError("none held")


def _groups() -> str:
    extra = set(os.getgroups()) - {os.getgid()}
    if extra:
        return f"held: {sorted(extra)}"
    raise PermissionError("none held")


def _signal_owner(pid: int) -> str:
    """Make lvegit the owner of a descriptor's I/O signals (F_SETOWN): SIGIO, which ends a process that does
    not handle it, would then go to lvegit. Setting the owner sends nothing yet."""
    read, write = os.pipe()
    try:
        fcntl.fcntl(read, fcntl.F_SETOWN, pid)
    finally:
        os.close(read)
        os.close(write)
    return "lvegit owns the descriptor's signals"


def _limit(pid: int) -> str:
    """Read lvegit's limits (prlimit64 on another process: the same call sets them)."""
    return f"its open files limit: {resource.prlimit(pid, resource.RLIMIT_NOFILE)}"


def _priority(pid: int) -> str:
    """Set lvegit's scheduling priority (to the value it has: a worker could lower it)."""
    os.setpriority(os.PRIO_PROCESS, pid, os.getpriority(os.PRIO_PROCESS, pid))
    return "set"


def _priority_user() -> str:
    """Set the priority of every process of the worker's user (to the value it has: it could lower it)."""
    os.setpriority(os.PRIO_USER, 0, os.getpriority(os.PRIO_USER, 0))
    return "set"


def _chmod(path: str) -> str:
    """Change the mode of a file outside the scratch folder (to the mode it has: it could open it up)."""
    os.chmod(path, os.stat(path).st_mode & 0o7777)
    return "changed"


def _set_id_file() -> str:
    """Create a set-uid program in the scratch folder (what another user could run as the worker's)."""
    descriptor = os.open("set-id", os.O_CREAT | os.O_WRONLY, 0o4755)
    os.close(descriptor)
    if os.stat("set-id").st_mode & 0o4000:
        return "set-uid file made"
    raise PermissionError("made without its set-uid bit")


UNSEEN_BYTES = 64 * 1024**2  # past the file-size limit (16 MiB)


def _unseen_space() -> str:
    """Set aside disk space that neither the file-size limit nor the scratch watch sees: fallocate with
    FALLOC_FL_KEEP_SIZE (1) into a file unlinked and held open allocated blocks past RLIMIT_FSIZE on ext4,
    which checks the limit against the size only (a whole disk in one call)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
    descriptor = os.open("unseen", os.O_CREAT | os.O_RDWR, 0o600)
    try:
        os.unlink("unseen")
        if libc.fallocate(descriptor, 1, 0, UNSEEN_BYTES) != 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))
        return f"{os.fstat(descriptor).st_blocks * 512} bytes set aside, unseen"
    finally:
        os.close(descriptor)


def _uid() -> str:
    if os.getuid() == 0 or os.geteuid() == 0:
        return "uid 0"
    raise PermissionError(f"uid {os.getuid()}")


def plant() -> dict[str, Any]:
    """In a sibling worker: write a file in each folder of PLANTED that it can, as an honest checker would
    keep its work; the files written and this worker's pid."""
    written = []
    for folder in PLANTED:
        path = os.path.join(folder.format(scratch=os.getcwd()), f"kept-by-worker-{os.getpid()}")
        with contextlib.suppress(OSError), open(path, "w") as handle:
            handle.write("a sibling's work")
            written.append(os.path.normpath(path))
    return {"files": written, "pid": os.getpid()}


def unplant(planted: dict[str, Any]) -> None:
    for path in planted["files"]:
        with contextlib.suppress(OSError):
            os.remove(path)


def _sibling_files(sibling: dict[str, Any], mode: str) -> str:
    """Open each of a sibling's files (read, or read and write), also through its /proc/<pid>/cwd: done
    where any opened."""
    files = [str(path) for path in sibling["files"]]
    through_proc = [f"/proc/{int(sibling['pid'])}/cwd/{os.path.basename(path)}" for path in files[:1]]
    reached = []
    for path in [*files, *through_proc]:
        with contextlib.suppress(OSError), open(path, mode) as handle:
            handle.read()
            if "+" in mode:
                handle.seek(0)
                handle.write("rewritten")
            reached.append(path)
    if reached:
        return f"reached {reached}"
    raise PermissionError(f"none of {len(files) + len(through_proc)} reached")


def _memory(pid: int) -> str:
    """Open another process's memory read-write (what rewrote bubblewrap's pid 1, out of seccomp)."""
    with open(f"/proc/{pid}/mem", "r+b"):
        return f"/proc/{pid}/mem opened read-write"


def _processes() -> str:
    others = [name for name in os.listdir("/proc") if name.isdigit() and int(name) != os.getpid()]
    if others:
        return f"{len(others)} other processes listed"
    raise PermissionError("no other process listed")


def _xattr(path: str) -> str:
    """Read an extended attribute of a file the worker may not open (lvegit set one where it could)."""
    return f"{os.listxattr(path)}: {os.getxattr(path, 'user.lvegit')!r}"


def _stat(path: str) -> str:
    found = os.stat(path)
    return f"size {found.st_size}, owner {found.st_uid}, modified {int(found.st_mtime)}"


def attempt_all(targets: dict[str, Any]) -> dict[str, str]:
    """Every attack, in the order of PROBES."""
    attempts: dict[str, Callable[[], object]] = {
        "secret_file": lambda: _read(str(targets["secret_file"])),
        "write_outside": lambda: _write_outside(str(targets["outside_folder"])),
        "tcp_connect": lambda: _connect(socket.AF_INET, ("127.0.0.1", int(targets["tcp_port"]))),
        "unix_connect": lambda: _connect(socket.AF_UNIX, str(targets["unix_socket"])),
        "abstract_socket": lambda: _connect(socket.AF_UNIX, "\0" + str(targets["abstract_socket"])),
        "io_uring": _io_uring,
        "terminal": lambda: os.close(os.open("/dev/tty", os.O_RDWR)),
        "signal_lvegit": lambda: os.kill(int(targets["lvegit_pid"]), 0),
        "signal_owner": lambda: _signal_owner(int(targets["lvegit_pid"])),
        "limit_lvegit": lambda: _limit(int(targets["lvegit_pid"])),
        "priority_lvegit": lambda: _priority(int(targets["lvegit_pid"])),
        "priority_user": _priority_user,
        "chmod_outside": lambda: _chmod(str(targets["secret_file"])),
        "set_id_file": _set_id_file,
        "process": _fork,
        "program": _program,
        "proc_environ": lambda: _proc_environ(int(targets["lvegit_pid"])),
        "groups": _groups,
        "capabilities": _capabilities,
        "uid": _uid,
        "sibling_read": lambda: _sibling_files(targets["sibling"], "r"),
        "sibling_rewrite": lambda: _sibling_files(targets["sibling"], "r+"),
        "proc_pid1_mem": lambda: _memory(1),
        "proc_sibling": lambda: _memory(int(targets["sibling"]["pid"])),
        "proc_processes": _processes,
        "xattr_secret": lambda: _xattr(str(targets["secret_file"])),
        "stat_secret": lambda: _stat(str(targets["secret_file"])),
        "readlink_secret": lambda: os.readlink(str(targets["secret_link"])),
        "proc_stat": lambda: _stat(f"/proc/{int(targets['lvegit_pid'])}"),
        "unseen_space": _unseen_space,
    }
    with contextlib.suppress(Exception):
        socket.setdefaulttimeout(5)
    return {name: _outcome(attempts[name]) for name in PROBES}
