"""Each confinement layer, applied in a forked child that reports back what it could still do."""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lvegit.checkers import confine

from builders import shipped_schema_accepts


def in_child(body: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        os.close(read_end)
        # as a worker's fork does (worker._fork_worker): this test process may hide itself already, after
        # an earlier test started a launcher, which would leave the child's /proc files root's
        confine.allow_inspection()
        try:
            result = body()
        except BaseException as exc:
            result = {"crashed": repr(exc)}
        os.write(write_end, json.dumps(result).encode())
        os._exit(0)
    os.close(write_end)
    data = b""
    while chunk := os.read(read_end, 65536):
        data += chunk
    os.waitpid(pid, 0)
    return dict(json.loads(data))


def attempt(action: Callable[[], object]) -> str:
    try:
        action()
    except OSError as exc:
        return type(exc).__name__
    return "allowed"


def test_seccomp_blocks_processes_programs_and_sockets_but_not_threads() -> None:
    def body() -> dict[str, Any]:
        report = confine.apply_seccomp()
        seen = []
        thread = threading.Thread(target=lambda: seen.append("ran"))
        thread.start()
        thread.join()

        def fork() -> None:
            if os.fork() == 0:
                os._exit(0)

        return {
            "report": report,
            "fork": attempt(fork),
            "exec": attempt(lambda: subprocess.run(["true"], check=False)),
            "socket": attempt(socket.socket),
            "unix": attempt(socket.socketpair),
            "thread": seen,
        }

    result = in_child(body)
    if "unavailable" in result["report"]:
        pytest.skip(result["report"])
    assert result == {
        "report": "seccomp: no processes, programs or sockets",
        "fork": "PermissionError",
        "exec": "PermissionError",
        "socket": "PermissionError",
        "unix": "PermissionError",
        "thread": ["ran"],
    }


def test_sandbox_command_reports_the_layers(cli: Any) -> None:
    result = cli("sandbox", "--format", "json")
    assert result.code == 0
    shipped_schema_accepts(result.json(), "sandbox")
    layers = result.json()["isolation"]
    assert (
        layers[-2]
        == "limits: CPU 120 s, memory 2 GiB, file size 16 MiB, 256 open files, no core dumps, 128 threads"
    )
    assert layers[-1].startswith("seccomp")
    text = cli("sandbox")
    assert text.out.startswith("Custom checkers run in a separate process without secrets")


def test_seccomp_program_jumps_only_forward() -> None:
    for arch in ("x86_64", "aarch64"):
        program = confine.seccomp_program(arch)
        for index, (_code, jump_true, jump_false, _k) in enumerate(program):
            assert 0 <= index + jump_true + 1 < len(program) + 1
            assert 0 <= index + jump_false + 1 < len(program) + 1


def test_resource_limits() -> None:
    def body() -> dict[str, Any]:
        report = confine.set_limits(
            confine.Limits(cpu_seconds=5, memory_bytes=512 * 1024**2, file_bytes=1024)
        )
        try:
            bytearray(1024**3)
            memory = "allowed"
        except MemoryError:
            memory = "MemoryError"
        return {
            "report": report,
            "memory": memory,
            "cpu": resource.getrlimit(resource.RLIMIT_CPU)[0],
            "fsize": resource.getrlimit(resource.RLIMIT_FSIZE)[0],
        }

    assert in_child(body) == {
        "report": "limits: CPU 5 s, memory 512 MiB, file size 1 KiB, 256 open files, no core dumps, 128 threads",
        "memory": "MemoryError",
        "cpu": 5,
        "fsize": 1024,
    }


def test_namespaces_make_the_filesystem_read_only_and_cut_the_network(tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    marker = Path("/var/lvegit-namespace-marker")

    def body() -> dict[str, Any]:
        os.chdir(workdir)
        if confine.enter_namespaces(str(workdir), confine.Limits()) == confine.Isolation.NONE:
            return {"unavailable": True}
        Path("scratch").write_text("private")
        return {
            "cwd": os.getcwd(),
            "scratch": Path("scratch").read_text(),
            "write_outside": attempt(lambda: marker.write_text("x")),
            "network": attempt(lambda: socket.create_connection(("127.0.0.1", 9), timeout=1)),
        }

    result = in_child(body)
    if result.get("unavailable"):
        pytest.skip("namespaces are not available on this machine")
    assert result["cwd"] == str(workdir) and result["scratch"] == "private"
    assert result["write_outside"] == "OSError"  # read-only file system
    assert result["network"] == "OSError"  # network unreachable
    assert not marker.exists() and list(workdir.iterdir()) == []


def drop_capability(number: int) -> None:
    """Give up one capability for good, as a container without it starts (CAP_SYS_ADMIN: 21)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(confine.PR_CAPBSET_DROP, number, 0, 0, 0)
    header = confine._CapHeader(confine.LINUX_CAPABILITY_VERSION_3, 0)
    data = (confine._CapData * 2)()
    libc.capget(ctypes.byref(header), ctypes.byref(data))
    for part in data:
        for name in ("effective", "permitted", "inheritable"):
            setattr(part, name, getattr(part, name) & ~(1 << number) if number < 32 else getattr(part, name))
    libc.capset(ctypes.byref(header), ctypes.byref(data))


@pytest.mark.skipif(os.geteuid() != 0, reason="the machine's root only")
def test_root_without_namespaces_becomes_a_uid_of_its_own(tmp_path: Path) -> None:
    """Root without CAP_SYS_ADMIN (the published container) enters no namespace, and no user namespace
    either, whose root would own root's files: the worker becomes a uid that owns nothing instead."""
    workdir = tmp_path / "work"
    workdir.mkdir()

    def body() -> dict[str, Any]:
        os.chdir(workdir)
        drop_capability(21)
        isolation = confine.enter_namespaces(str(workdir), confine.Limits())
        report, own = confine.drop_privileges(isolation, confine.worker_uid(os.getpid()))
        return {
            "isolation": isolation.value,
            "report": report,
            "own": own,
            "uid": os.getuid(),
            "capabilities": confine.held_capabilities(),
            "shadow": attempt(lambda: open("/etc/shadow").read()),
            "scratch": attempt(lambda: Path("scratch").write_text("mine")),
        }

    result = in_child(body)
    assert result["isolation"] == "none" and result["own"] is True
    assert (
        result["uid"] >= confine.WORKER_UID_BASE
        and result["report"] == f"privileges: no capabilities, uid {result['uid']}"
    )
    assert result["capabilities"] is False
    assert result["shadow"] == "PermissionError" and result["scratch"] == "allowed"  # its own scratch folder
