"""lvegit's side of an LVE's environment: its code runs in one confined checker worker per LVE (started on
first use, lvegit.checkers.sandbox), which serves the tool calls of every attempt of a run, each on the
state of its own session, and answers its checks. Where the sandbox does not hold, the environment is
refused as a custom checker is.
"""

from __future__ import annotations

import itertools
import json
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lvegit.base.errors import CheckerError
from lvegit.base.files import FileProblem
from lvegit.checkers.launcher import launcher
from lvegit.lve.environment import ENVIRONMENT_DIR, filled_state, read_sources, read_state
from lvegit.lve.prompt import ToolCall
from lvegit.lve.template import TemplateError

if TYPE_CHECKING:
    from lvegit.checkers.sandbox import CheckerWorker, SandboxSettings
    from lvegit.lve.spec import LVE

TOOL_SECONDS = 5.0  # one tool call at most (a tool's work is a few dictionary updates)


@dataclass(frozen=True)
class Answer:
    """What a tool call was answered: the text the model sees, and the error when the tool failed."""

    result: str
    error: str | None = None


class EnvironmentWorker:
    """One LVE's environment in its sandboxed worker; `close` stops it."""

    def __init__(self, lve: LVE, sandbox: SandboxSettings | None = None) -> None:
        self.lve = lve
        self.sandbox = sandbox
        self._worker: CheckerWorker | None = None
        self._described: dict[str, Any] = {}
        self._sessions = itertools.count(1)
        self._state: Any = None
        self._lock = threading.RLock()

    def _where(self, exc: FileProblem | TemplateError) -> CheckerError:
        return CheckerError(f"{self.lve.rel}/{ENVIRONMENT_DIR}: {exc}")

    def worker(self) -> CheckerWorker:
        """The worker with the environment's code loaded (started now, on first use)."""
        if self._worker is None:
            from lvegit.checkers.sandbox import CheckerWorker  # starts processes: only when needed

            try:
                sources = read_sources(self.lve.dir)
            except FileProblem as exc:
                raise self._where(exc) from None
            launcher().load_environments()
            worker = CheckerWorker(self.lve.rel, self.lve.dir, self.sandbox, "environment code is")
            try:
                self._described = worker.call({"op": "environment", "sources": sources})
            except BaseException:
                worker.close()
                raise
            self._worker = worker
        return self._worker

    def _call(self, request: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        """One request and its reply, whole: a live run's tool calls (on its event loop) and its verdicts
        (on a thread, once judging took long) share the worker."""
        with self._lock:
            return self.worker().call(request, timeout)

    @property
    def checks(self) -> list[str]:
        """The checks environment/checks.py defines (security, utility)."""
        with self._lock:
            self.worker()  # the code, loaded, says what it defines
        checks = self._described.get("checks")
        return [str(name) for name in checks] if isinstance(checks, list) else []

    def initial_state(self, params: dict[str, Any]) -> Any:
        """state.json filled with the injections' texts (the instance's, else the defaults)."""
        assert self.lve.environment is not None
        if self._state is None:
            try:
                self._state = read_state(self.lve.dir)
            except FileProblem as exc:
                raise self._where(exc) from None
        try:
            return filled_state(self._state, self.lve.environment.values(params))
        except TemplateError as exc:
            raise self._where(exc) from None

    def session(self, before: Any) -> Session:
        """A new attempt on the state `before` (JSON data)."""
        name = str(next(self._sessions))
        reply = self._call({"op": "start", "session": name, "state": before})
        return Session(self, name, _json(reply.get("state"), "the state"))

    def tool(self, session: str, call: ToolCall, arguments: dict[str, Any]) -> Answer:
        request = {"op": "tool", "session": session, "name": call.name, "arguments": arguments}
        reply = self._call(request, TOOL_SECONDS)
        result, error = reply.get("result"), reply.get("error")
        if not isinstance(result, str) or not isinstance(error, str | None):
            raise CheckerError(f"{self.lve.rel}: the environment's worker sent an invalid reply")
        return Answer(result, error)

    def end(self, session: str) -> Any:
        return _json(self._call({"op": "end", "session": session}).get("state"), "the state")

    def judge(self, check: str, output: str | None, before: Any, after: Any, calls: list[Any]) -> bool | None:
        """A check's answer on a record (no tool runs)."""
        request = {"op": "judge_state", "check": check, "output": output, "before": before, "after": after}
        value = self._call({**request, "calls": calls}).get("value")
        if value is not None and not isinstance(value, bool):
            raise CheckerError(f"{self.lve.rel}: the environment's worker sent an invalid reply")
        return value

    def close(self) -> None:
        if self._worker is not None:
            self._worker.close()
            self._worker = None


def _json(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise CheckerError(f"{what} is not a JSON object: {json.dumps(value)[:200]}")
    return dict(value)


class Session:
    """One attempt's environment: its state before the first call, the calls it answers."""

    def __init__(self, environment: EnvironmentWorker, name: str, before: dict[str, Any]) -> None:
        self.environment = environment
        self.name = name
        self.before = before

    def answer(self, call: ToolCall, arguments: dict[str, Any]) -> Answer:
        return self.environment.tool(self.name, call, arguments)

    def end(self) -> dict[str, Any]:
        """The state after the last call (the session ends)."""
        after: dict[str, Any] = self.environment.end(self.name)
        return after
