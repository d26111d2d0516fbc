"""Running an LVE's custom checker in a confined worker process (see lvegit.checkers.worker).

lvegit itself may hold secrets (API keys, a GitHub token); contributed checker code never runs in its
process. The worker gets an environment without secrets, a temporary working directory, resource limits
and whatever isolation the machine allows; every request has a wall-clock timeout. A worker that crashes,
hangs or answers garbage is killed, and costs only its own LVE a clear error. Replies are hostile data:
they are size-limited and type-checked.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import json
import os
import selectors
import signal
import tempfile
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lvegit.base import settings
from lvegit.base.errors import CheckerError, CheckerUnavailable
from lvegit.checkers.base import BaseChecker, MultiRunBaseChecker
from lvegit.checkers.budget import command_budget, exhausted
from lvegit.checkers.custom import read_checker_sources
from lvegit.checkers.launcher import launcher
from lvegit.checkers.model_stack import hub_cache
from lvegit.lve.prompt import Message
from lvegit.sandbox.privileges import Limits
from lvegit.sandbox.refusal import unconfined_refusal
from lvegit.sandbox.scratch import remove_tree, worker_folder

MAX_MESSAGE_CHARS = 2_000


@dataclass(frozen=True)
class SandboxSettings:
    """Timeouts may be raised for slow checkers: LVEGIT_CHECKER_LOAD_TIMEOUT (importing and building a
    checker, default 120 s) and LVEGIT_CHECKER_TIMEOUT (one verdict, default 30 s)."""

    limits: Limits = field(default_factory=Limits)
    start_timeout: float = 30.0
    build_timeout: float = field(default_factory=lambda: settings.current().checkers.load_timeout)
    call_timeout: float = field(default_factory=lambda: settings.current().checkers.call_timeout)
    lve_budget: float = field(default_factory=lambda: settings.current().checkers.lve_budget)
    command_budget: float = field(default_factory=lambda: settings.current().checkers.command_budget)
    max_reply_bytes: int = 16 * 1024**2
    allow_unconfined: bool = field(default_factory=lambda: settings.current().checkers.allow_unconfined)


def _installed_here(module: str) -> bool:
    """Whether lvegit's own interpreter can find a package (the sandbox must not claim it is missing)."""
    try:
        return importlib.util.find_spec(module.split(".")[0]) is not None
    except (ImportError, ValueError):
        return False


def _short(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE_CHARS else text[:MAX_MESSAGE_CHARS] + "..."


class CheckerWorker:
    """One worker process; `label` (the LVE) prefixes every error it raises; `code`: what contributed code it
    runs, for the refusal where the sandbox does not hold."""

    def __init__(
        self,
        label: str,
        lve_dir: Path,
        settings: SandboxSettings | None = None,
        code: str = "custom checker code is",
    ) -> None:
        self.label = label
        self.settings = settings or SandboxSettings()
        self.failure: str | None = None
        self.isolation: list[str] = []
        self.confined = False
        self.hub_models: list[str] = []  # the hub models the checker asked for
        self._launcher = launcher()
        self._workdir = worker_folder(self._launcher.scratch, "worker-")
        # Removed by close, or when a worker nobody closed is collected or the process exits.
        self._remove_workdir = weakref.finalize(self, remove_tree, self._workdir)
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the worker
        self._buffer = b""
        try:  # sent with each build: the repository is not in the sandbox's view
            self._sources: dict[str, str] | CheckerError = read_checker_sources(lve_dir)
        except CheckerError as exc:
            self._sources = exc
        stdin_read, stdin_write = os.pipe()
        stdout_read, stdout_write = os.pipe()
        self._stdin = os.fdopen(stdin_write, "wb")
        self._stdout = os.fdopen(stdout_read, "rb", buffering=0)
        request = {
            "limits": dataclasses.asdict(self.settings.limits),
            "lve_dir": str(lve_dir),
            "workdir": self._workdir,
            # lvegit's hub cache, read-only inside the sandbox: a checker whose model is cached loads it
            # as a core classifier does (HF_HOME is not passed: it also holds the hub token)
            "hub_cache": str(hub_cache().absolute()),
            "allow_unconfined": self.settings.allow_unconfined,
        }
        self._past_bound: str | None = None  # why the scratch watch ended it
        try:
            stderr = self._stderr.fileno()
            self.pid: int | None = self._launcher.spawn(request, stdin_read, stdout_write, stderr)
            past = weakref.WeakMethod(self._scratch_past)  # the watch does not keep the worker alive
            self._launcher.watch.add(self._workdir, lambda why: (method := past()) and method(why))
        except CheckerError as exc:
            self.pid = None
            self._fail(str(exc))
        finally:
            os.close(stdin_read)  # the worker has its own copies
            os.close(stdout_write)
        hello = self._timed(self.settings.start_timeout)
        isolation = hello.get("isolation")
        if hello.get("ready") is not True or not isinstance(isolation, list):
            self._fail("the checker process did not start properly")
            return
        self.isolation = [_short(str(line)) for line in isolation]
        self.confined = hello.get("confined") is True
        if not self.confined and not self.settings.allow_unconfined:
            self._fail(unconfined_refusal(self.isolation, code))

    def _scratch_past(self, why: str) -> None:
        """Called by the scratch watch (on its thread): the worker's folder passed its bound."""
        self._past_bound = why
        pid = self.pid
        if pid is not None:
            self._launcher.kill(pid)

    def _fail(self, reason: str) -> None:
        self.failure = f"{self.label}: {self._past_bound or reason}"
        self.close()
        raise CheckerError(self.failure)

    def _startup_trace(self) -> str:
        self._stderr.seek(0)
        lines = self._stderr.read().decode("utf-8", "replace").strip().splitlines()
        return f": {_short(lines[-1])}" if lines else ""

    def _wait(self) -> tuple[int, float]:
        """The worker's exit code and the CPU seconds it (and the process it waited for) used."""
        assert self.pid is not None
        return self._launcher.wait(self.pid)

    def _exit_reason(self, code: int, cpu_seconds: float) -> str:
        """Why the worker ended, naming the limit it reached where its end says so."""
        # A negative code is a signal; the namespaced worker's outer process reports one as 128 + number.
        number = -code if code < 0 else code - 128 if code > 128 else None
        limits = self.settings.limits
        trace = self._startup_trace()
        # Native code that ignores SIGXCPU is killed at the hard limit, a second later.
        if number == signal.SIGXCPU or (number == signal.SIGKILL and cpu_seconds >= limits.cpu_seconds):
            return f"the checker reached its {limits.cpu}"
        if number == signal.SIGXFSZ:
            return f"the checker reached its {limits.file_size}"
        if any(sign in trace for sign in ("MemoryError", "bad_alloc", "Cannot allocate memory")):
            return f"the checker reached its {limits.memory}{trace}"
        if number is not None:
            with contextlib.suppress(ValueError):
                return f"the checker process was ended by {signal.Signals(number).name}{trace}"
        return f"the checker process exited (code {code}){trace}"

    def _send(self, data: bytes, timeout: float) -> None:
        """Write a request within `timeout`: a worker that stops reading (its checker never returns while
        the pipe is full) would otherwise hold lvegit for good."""
        descriptor = self._stdin.fileno()
        os.set_blocking(descriptor, False)
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as selector:
            selector.register(descriptor, selectors.EVENT_WRITE)
            while data:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not selector.select(remaining):
                    self._fail(f"the checker did not read its request within {timeout:g} s")
                try:
                    data = data[os.write(descriptor, data) :]
                except BlockingIOError:
                    continue
                except OSError:
                    self._fail("the checker process is gone")

    def _receive(self, timeout: float, too_late: str | None = None) -> dict[str, Any]:
        """The next reply; `too_late`: what to say when none came within `timeout`."""
        stdout = self._stdout
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as selector:
            selector.register(stdout, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not selector.select(remaining):
                    self._fail(too_late or f"the checker did not answer within {timeout:g} s")
                chunk = os.read(stdout.fileno(), 65536)
                if not chunk:
                    self._fail(self._exit_reason(*self._wait()))
                self._buffer += chunk
                if len(self._buffer) > self.settings.max_reply_bytes:
                    self._fail(f"the checker sent more than {self.settings.max_reply_bytes} bytes")
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            reply = json.loads(line)
        except (ValueError, RecursionError):  # nested past the parser's depth: no worker's reply either
            reply = None
        if not isinstance(reply, dict):
            self._fail("the checker process sent something that is not a JSON object")
        return dict(reply)

    def _timed(self, timeout: float) -> dict[str, Any]:
        """The next reply within `timeout` and what is left of the LVE's and the command's budgets, which
        the time it took is taken from."""
        budget = command_budget()  # the LVE's seconds are counted there, across every worker of it
        lve_left = self.settings.lve_budget - budget.by_lve.get(self.label, 0.0)
        command_left = self.settings.command_budget - budget.spent
        if min(lve_left, command_left) < timeout:
            exhausted_now = exhausted(
                "custom checker code",
                lve_left,
                command_left,
                self.settings.lve_budget,
                self.settings.command_budget,
            )
            if min(lve_left, command_left) <= 0:
                self._fail(exhausted_now)
            started = time.monotonic()
            try:
                return self._receive(min(lve_left, command_left), exhausted_now)
            finally:
                self._spend(time.monotonic() - started)
        started = time.monotonic()
        try:
            return self._receive(timeout)
        finally:
            self._spend(time.monotonic() - started)

    def _spend(self, seconds: float) -> None:
        command_budget().add(seconds, self.label)

    def call(self, request: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        if self.failure is not None:
            raise CheckerError(self.failure)
        self._send(json.dumps(request).encode() + b"\n", timeout or self.settings.call_timeout)
        reply = self._timed(timeout or self.settings.call_timeout)
        models = reply.get("hub_models")
        if isinstance(models, list) and all(isinstance(m, str) and len(m) <= 200 for m in models[:50]):
            self.hub_models = models[:50]
        if reply.get("ok") is True:
            return reply
        message = _short(str(reply.get("message", "unknown error")))
        if reply.get("kind") == "unavailable":
            module = reply.get("module")
            if isinstance(module, str) and _installed_here(module):
                raise CheckerError(
                    f"{self.label}: the Python package '{module}' is installed, but the checker could not "
                    "import it inside the sandbox (see lvegit sandbox)"
                )
            raise CheckerUnavailable(f"{self.label}: {message}")
        raise CheckerError(f"{self.label}: {message}")

    def build(self, class_name: str, args: dict[str, Any]) -> BaseChecker:
        if isinstance(self._sources, CheckerError):
            raise CheckerError(f"{self.label}: {self._sources}")
        request = {"op": "build", "class_name": class_name, "args": args, "sources": self._sources}
        reply = self.call(request, self.settings.build_timeout)
        if not isinstance(reply.get("id"), int) or not isinstance(reply.get("multi_run"), bool):
            self._fail("the checker process sent an invalid reply")
        cls = SandboxedMultiRunChecker if reply["multi_run"] else SandboxedChecker
        return cls(self, reply["id"])

    def close(self) -> None:
        self._launcher.watch.remove(self._workdir)
        if self.pid is not None:
            self._launcher.kill(self.pid)  # the worker and anything it left behind, unless it has ended
            self._launcher.wait(self.pid)
            self.pid = None
        for stream in (self._stdin, self._stdout, self._stderr):
            with contextlib.suppress(OSError):
                stream.close()
        self._remove_workdir()


def _conversation(messages: list[Message]) -> list[dict[str, Any]]:
    return [m.as_json() for m in messages]


class _Remote:
    """What both proxies share: the worker, the checker's id there, and reply checking."""

    def __init__(self, worker: CheckerWorker, checker_id: int) -> None:
        self.worker = worker
        self.checker_id = checker_id

    def _ask(self, op: str, **fields: Any) -> dict[str, Any]:
        return self.worker.call({"op": op, "id": self.checker_id, **fields})

    def _verdict(self, **fields: Any) -> bool:
        verdict = self._ask("check", **fields).get("verdict")
        if not isinstance(verdict, bool):
            self.worker._fail("the checker process sent a verdict that is not true or false")
        return bool(verdict)

    def postprocess_response(self, response: Any) -> Any:
        processed = self._ask("postprocess", response=response).get("response")
        if not isinstance(processed, str | dict | list):
            self.worker._fail("postprocess_response returned something that is not a response")
        return processed

    def replay_skip_reason(self, response: Any) -> str | None:
        reason = self._ask("skip_reason", response=response).get("reason")
        return None if reason is None else _short(str(reason))


class SandboxedChecker(_Remote, BaseChecker):
    def invoke_check(
        self, prompt_in: list[Message], prompt_out: list[Message], param_values: dict[str, Any]
    ) -> bool:
        return self._verdict(
            prompt_in=_conversation(prompt_in), prompt_out=_conversation(prompt_out), params=param_values
        )


class SandboxedMultiRunChecker(_Remote, MultiRunBaseChecker):
    def invoke_check_runs(
        self, prompts_in: list[list[Message]], prompts_out: list[list[Message]], param_values: dict[str, Any]
    ) -> bool:
        return self._verdict(
            runs=True,
            prompt_in=[_conversation(p) for p in prompts_in],
            prompt_out=[_conversation(p) for p in prompts_out],
            params=param_values,
        )
