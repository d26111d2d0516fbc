"""What a sandboxed worker gives up besides files and system calls: its uid (root only), groups and
capabilities, verified from /proc/self/status rather than assumed; resource limits the kernel enforces;
being inspected (PR_SET_DUMPABLE 0: no other process of its uid opens /proc/<pid>/mem); its parent's
death ends it."""

from __future__ import annotations

import ctypes
import os
import resource
from collections.abc import Callable
from dataclasses import dataclass

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
LINUX_CAPABILITY_VERSION_3 = 0x20080522
# A worker started as root becomes a uid of its own: no file, no user and no other process has it. Chosen
# at random (the pid repeats across PID namespaces); every other protection holds between two workers that
# drew the same one.
WORKER_UID_BASE = 2_100_000_000
WORKER_UID_SPAN = 40_000_000


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


def _prctl(option: int, value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


def die_with_parent() -> None:
    _prctl(PR_SET_PDEATHSIG, 9)


def set_dumpable(dumpable: bool) -> None:
    """Not dumpable: the process's /proc files become root's and no process of its uid may attach to it
    or read its memory or environment (lvegit and the launcher hold themselves so too)."""
    if os.uname().sysname == "Linux":
        _prctl(PR_SET_DUMPABLE, int(dumpable))


def new_worker_uid() -> int:
    # os.urandom, not secrets: secrets loads OpenSSL (through hmac) into every launcher for this one number
    return WORKER_UID_BASE + int.from_bytes(os.urandom(8), "big") % WORKER_UID_SPAN


def become(uid: int, scratch: str) -> None:
    """Root gives itself up for `uid`: its group too, no other group, and its scratch folder is its own."""
    os.chown(scratch, uid, uid)
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)  # empties the permitted and effective sets
    clear_capabilities()  # and the inheritable one, which bubblewrap filled with the launcher's


def clear_capabilities() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    header = (ctypes.c_uint32 * 2)(LINUX_CAPABILITY_VERSION_3, 0)
    if libc.capset(header, (ctypes.c_uint32 * 6)()) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


def held_privileges(uid: int | None) -> list[str]:
    """What this process still holds that a worker must not: capabilities (effective, permitted,
    inheritable, ambient; the bounding set is harmless once these are empty under no_new_privs) and, where
    `uid` is given (a worker started as root, which gives them up), any other uid or gid and supplementary
    groups. Read from the kernel, not assumed. A worker of an unprivileged user keeps that user's groups:
    no unprivileged process can drop them, and nothing they open is in its reach (no sockets; files from
    the allow-list only): see kept_groups."""
    with open("/proc/self/status") as handle:
        fields = dict(line.rstrip("\n").split(":\t", 1) for line in handle if ":\t" in line)
    held = [name for name in ("CapEff", "CapPrm", "CapInh", "CapAmb") if int(fields.get(name, "0"), 16)]
    if uid is not None and kept_groups():
        held.append(f"groups {kept_groups()}")
    if uid is not None and (os.getresuid() != (uid, uid, uid) or os.getresgid() != (uid, uid, uid)):
        held.append(f"uid {os.getresuid()}, gid {os.getresgid()}")
    return held


def kept_groups() -> list[int]:
    """The supplementary groups this process has besides its own group."""
    return sorted(set(os.getgroups()) - {os.getgid()})


def set_limits(limits: Limits, own_uid: bool) -> str:
    """`own_uid`: whether no other process has the worker's uid: RLIMIT_NPROC counts every thread of that
    uid, so it limits the worker's threads only then."""
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
