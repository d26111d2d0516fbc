"""Starting sandboxed checker workers quickly: one launcher process per lvegit process forks them.

Starting Python and importing the worker's modules takes about 0.1 s of CPU, more than a worker's
confinement and many a checker's whole work; a repository with a few custom checkers paid it once per
LVE. The launcher (`python -I -m lvegit.checkers.worker`, started through lvegit.base.processes) pays it
once: inside bubblewrap where the machine allows namespaces (lvegit.sandbox.bwrap), else as a plain
process; with an environment that holds no secrets. It imports the worker's code, builds the seccomp filter
and then, for each request, forks a child that becomes one worker (lvegit.checkers.worker.become_worker)
and confines itself. lvegit's own process, which may hold secrets, never forks a worker.

The protocol runs over a Unix socket pair (SOCK_SEQPACKET, one JSON message each): the launcher first says
hello ({"ready": true, "seccomp": null or why it is missing}); a request carries the worker's stdin, stdout
and stderr descriptors (SCM_RIGHTS) and is answered with the child's pid; when a child ends, the launcher
reaps it and says so with its wait status and CPU seconds. Killing goes through the launcher too: only the
child's parent knows that a pid still names that child.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import threading
from typing import Any

from lvegit.base import processes, settings
from lvegit.base.errors import CheckerError
from lvegit.checkers.channel import receive, send
from lvegit.checkers.model_stack import hub_cache
from lvegit.sandbox import bwrap, privileges, scratch, view

# Hub libraries stay offline inside the sandbox (it has no network; a checker loads only cached models).
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}
LAUNCHER_GONE = (-9, 0.0)  # a child of a launcher that died was killed with it (PR_SET_PDEATHSIG)


class Launcher:
    """lvegit's side of one launcher process. `namespaces`: whether bubblewrap started it; where it could
    not, `namespaces_refused` says why (bwrap's last line) and the launcher runs without it."""

    def __init__(self, executable: str, folder: str, hub: str, start_timeout: float = 30.0) -> None:
        privileges.set_dumpable(False)  # its own user's other processes (a worker, elsewhere) keep out
        self.scratch = folder
        self.watch = scratch.Watch(folder, scratch_bounds)  # what its workers' scratch folders hold
        self.namespaces_refused: str | None = None
        self.seccomp_missing: str | None = None
        program = bwrap.executable()
        self.namespaces = program is not None
        if program is None:
            self.namespaces_refused = "bubblewrap is not installed (not Linux)"
        elif not self._start(executable, program, hub, start_timeout):
            self.namespaces_refused, self.namespaces = self._why_gone(), False
            self._stop()
        if not self.namespaces and not self._start(executable, None, hub, start_timeout):
            raise CheckerError(self._why_gone())

    def _start(self, executable: str, program: str | None, hub: str, timeout: float) -> bool:
        """Start the launcher (inside bwrap when `program` is given); whether it said hello in time."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the launcher
        command = [executable, "-I", "-m", "lvegit.checkers.worker", "namespaces" if program else "plain"]
        if program is not None:
            read_only = [*view.import_paths(executable), hub]
            command = bwrap.command(program, command, read_only, [self.scratch], os.geteuid() == 0)
        environment = processes.environment(extra={"HOME": self.scratch, "TMPDIR": self.scratch, **OFFLINE})
        with theirs:
            self._process = processes.start(
                command, environment, stdin=theirs.fileno(), stdout=subprocess.DEVNULL, stderr=self._stderr
            )
        self._channel = ours
        ours.settimeout(timeout)
        try:
            hello, _ = receive(ours)
        except (OSError, ValueError):
            hello = None
        ours.settimeout(None)
        if hello is None or hello.get("ready") is not True:
            return False
        self.seccomp_missing = hello.get("seccomp")
        self._requests = threading.Lock()  # one request at a time: replies come in request order
        self._changed = threading.Condition()
        self._replies: list[dict[str, Any]] = []
        self._ended: dict[int, tuple[int, float]] = {}
        self._gone = False
        self._environments_loaded = False
        threading.Thread(target=self._read, name="lvegit-launcher", daemon=True).start()
        return True

    def _stop(self) -> None:
        with contextlib.suppress(OSError):
            self._channel.shutdown(socket.SHUT_RDWR)
        self._channel.close()
        self._process.kill()
        self._process.wait()
        self._stderr.close()

    def _read(self) -> None:
        while True:
            try:
                message, descriptors = receive(self._channel)
            except (OSError, ValueError):
                message, descriptors = None, []
            for descriptor in descriptors:
                os.close(descriptor)  # the launcher never sends any; a stray one is not kept open
            with self._changed:
                if message is None:
                    self._gone = True
                elif "ended" in message:
                    self._ended[int(message["ended"])] = (int(message["code"]), float(message["cpu"]))
                else:
                    self._replies.append(message)
                self._changed.notify_all()
            if message is None:
                return

    @property
    def alive(self) -> bool:
        with self._changed:
            return not self._gone

    def _why_gone(self) -> str:
        self._stderr.seek(0)
        lines = self._stderr.read().decode("utf-8", "replace").strip().splitlines()
        return f"the checker launcher process ended{': ' + lines[-1][:500] if lines else ''}"

    def _ask(self, request: dict[str, Any], descriptors: tuple[int, ...] = ()) -> dict[str, Any]:
        with self._requests:
            try:
                send(self._channel, request, descriptors)
            except OSError:
                raise CheckerError(self._why_gone()) from None
            with self._changed:
                self._changed.wait_for(lambda: bool(self._replies) or self._gone)
                if not self._replies:
                    raise CheckerError(self._why_gone())
                return self._replies.pop(0)

    def load_environments(self) -> None:
        """Have the launcher load what environments' workers use (pydantic's machinery), once, so that
        every worker forked after it starts with it loaded; a launcher that never serves an environment
        does not load it."""
        if not self._environments_loaded:
            self._ask({"load": "environments"})
            self._environments_loaded = True

    def spawn(self, request: dict[str, Any], stdin: int, stdout: int, stderr: int) -> int:
        """Fork a worker for `request` (lvegit.checkers.worker.become_worker reads it); its pid."""
        reply = self._ask(request, (stdin, stdout, stderr))
        if "pid" not in reply:
            raise CheckerError(f"the checker launcher could not start a worker: {reply.get('error')}")
        return int(reply["pid"])

    def wait(self, pid: int) -> tuple[int, float]:
        """Block until a worker has ended; its exit code and CPU seconds."""
        with self._changed:
            self._changed.wait_for(lambda: pid in self._ended or self._gone)
            return self._ended.get(pid, LAUNCHER_GONE)

    def kill(self, pid: int) -> None:
        """End a worker and whatever it started (its process group), unless it has ended already."""
        with self._requests, contextlib.suppress(OSError):
            send(self._channel, {"kill": pid})

    def close(self) -> None:
        """End the launcher at once (its workers die with it), even one that is still starting."""
        self._stop()
        scratch.remove_root(self.scratch)


def scratch_bounds() -> scratch.Bounds:
    """The bounds of the workers' scratch folders: LVEGIT_CHECKER_SCRATCH_MIB each."""
    return scratch.Bounds(bytes=settings.current().checkers.scratch_mib * 1024**2)


_LAUNCHERS: dict[tuple[str, str], Launcher] = {}
_STARTING = threading.Lock()
_STARTER = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="lvegit-launcher-parent")


def launcher() -> Launcher:
    """This process's launcher for the current interpreter and hub cache (which bubblewrap shows it),
    started on first use and closed at exit. One per process, like a thread pool: every LVE's worker comes
    from it."""
    with _STARTING:
        executable = sys.executable
        key = (executable, str(hub_cache().absolute()))
        running = _LAUNCHERS.get(key)
        if running is not None and running.alive:
            return running
        if running is not None:
            running.close()
        if not _LAUNCHERS:
            atexit.register(close_launchers)
        folder = scratch.make_root()  # every worker's scratch folder lives in it
        try:
            # bwrap's --die-with-parent follows the thread that starts it: one that lives as long as lvegit
            _LAUNCHERS[key] = _STARTER.submit(Launcher, executable, folder, key[1]).result()
        except BaseException:
            scratch.remove_root(folder)
            raise
        return _LAUNCHERS[key]


_SOON: list[threading.Thread] = []  # the thread that starts the launcher, once asked
_SOON_LOCK = threading.Lock()  # not _STARTING: a start holds that until the launcher says hello


def start_launcher_soon() -> None:
    """Start the launcher on a thread of its own, so that its start overlaps with other work (once: a start
    under way or done is not repeated). A failure to start is not reported here: the first worker asked
    for tries again and reports it."""

    def start() -> None:
        with contextlib.suppress(Exception):
            launcher()

    with _SOON_LOCK:
        if _SOON and (_SOON[0].is_alive() or _LAUNCHERS):
            return
        _SOON[:] = [threading.Thread(target=start, name="lvegit-launcher-start", daemon=True)]
    _SOON[0].start()


def launcher_starting() -> bool:
    """Whether a start asked for by start_launcher_soon is under way: whoever would wait for the launcher
    may do other work first (once it has started, or failed to, there is nothing to wait for)."""
    return bool(_SOON) and _SOON[0].is_alive()


def close_launchers() -> None:
    with _STARTING:
        for running in _LAUNCHERS.values():
            running.close()
        _LAUNCHERS.clear()
