"""Checker lambdas are evaluated in a worker process whose time and memory the kernel bounds.

lambda_work charges a lambda's steps to a budget, but work done in C between two steps escapes it: a set
of colliding integers, `sum` of lists, `==` over shared nested lists, a big tuple hashed again and again,
a regex call under its timeout made two hundred times. So lvegit evaluates no lambda in its own process.
A lambda worker is lvegit's own code (no contributed code runs there but the allow-listed lambdas),
forked by the sandbox launcher like a custom checker's worker; its address space is limited (RLIMIT_AS:
a verdict that builds too much ends in MemoryError), and lvegit kills it when a verdict takes longer than
VERDICT_SECONDS or what is left of its LVE's budget, then starts another for the verdicts after it.

Verdicts go in batches, one JSON line each way per verdict in a batch, so that the process hop costs
microseconds per verdict: replay sends an LVE's instances together (judge_batched), the live run the verdicts
that became ready while the last batch was judged, and its event loop serves requests while the worker
judges (judge_batched_async). A verdict judged on its own is a batch of one.
The checkers call a WorkerLambda like the function it stands for; judge_batched runs each verdict up to its
lambda call to collect the arguments, and again, with the worker's answers, to finish it, unless the lambda
decides the verdict (its value is what is_safe returns) and the verdict is what is_safe returned (replay's):
then the answer is the verdict.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import selectors
import threading
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from lvegit.base import settings
from lvegit.base.errors import CheckerError, InvalidValue
from lvegit.checkers.budget import command_budget, exhausted, verdict_lve
from lvegit.checkers.launcher import Launcher, launcher
from lvegit.sandbox.privileges import Limits
from lvegit.sandbox.refusal import unconfined_refusal
from lvegit.sandbox.scratch import remove_tree, worker_folder

if TYPE_CHECKING:  # asyncio only where a live run awaits the worker: replay and check do not load it
    import asyncio

VERDICT_SECONDS = 5.0  # one verdict at most (legitimate lambdas take microseconds)
MEMORY_BYTES = 1024**3  # a verdict reads copies of a response of at most a few MiB
START_SECONDS = 30.0
CPU_SECONDS = 3600  # a worker lives for many verdicts: lvegit bounds each one, the command's budget them all
MAX_REPLY_BYTES = 64 * 1024**2
MAX_BATCH_CHARS = 16 * 1024**2  # a batch's calls as JSON (a batch of one call may be larger)

Reduce = Literal["truth", "number"]  # what the worker sends back: bool(value), or the number it is
T = TypeVar("T")


@dataclass
class Call:
    """One evaluation: the lambda's source, how its value is reduced, the arguments; the LVE whose budget it
    takes from, and whether its time is charged here (a batch) or by the verdict around it (on its own)."""

    source: str
    reduce: Reduce
    args: list[Any]
    kwargs: dict[str, Any]
    lve: str | None
    charged_here: bool
    decides: bool = False  # its value is the verdict (WorkerLambda.decides)

    def as_json(self) -> dict[str, Any]:
        return {"f": self.source, "r": self.reduce, "a": self.args, "k": self.kwargs}


Outcome = tuple[Any, BaseException | None]  # the reduced value, or what the evaluation raised
# Reading the worker's replies, as a generator: it yields a deadline (time.monotonic) when it must wait for
# the worker's output and is sent whether the output became readable before it; a blocking driver selects,
# the live run's event loop awaits (so that it serves requests meanwhile).
Reading = Generator[float, bool, T]


def _error(reply: dict[str, Any]) -> BaseException:
    """What a failed evaluation raises here: TypeError as it was (the checker says the lambda cannot be
    called with the instance's arguments), the rest as an InvalidValue naming it."""
    kind, message = str(reply.get("type")), str(reply.get("message"))
    if kind == "TypeError":
        return TypeError(message)
    if kind == "MemoryError":
        return InvalidValue(f"the lambda reached its memory limit of {MEMORY_BYTES // 1024**2} MiB")
    if kind in ("InvalidValue", "RegexTimeout", "UnsafeExpressionError"):
        return InvalidValue(message)
    return InvalidValue(f"{kind}: {message}")


class LambdaWorker:
    """lvegit's side of one lambda worker; started on first use, again after it was killed."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self.isolation: list[str] = []  # how the last worker was confined, a line per layer
        self.refusal: str | None = None  # why lambdas cannot run on this machine, once known
        self._workdir: str | None = None
        self._launcher: Launcher
        self.killed = 0  # how many times a verdict's limit ended it
        self._stdin: Any = None
        self._stdout = -1
        self._buffer, self._read_to = b"", 0
        self._selector: selectors.BaseSelector | None = None

    def _start(self) -> None:
        """Start a worker and read how it is confined; a CheckerError where it cannot run lambdas here."""
        if self.refusal is not None:  # the machine does not change: not asked again
            raise CheckerError(self.refusal)
        stdin_read, stdin_write = os.pipe()
        stdout_read, stdout_write = os.pipe()
        stderr = os.open(os.devnull, os.O_WRONLY)  # its failures are told in its replies
        try:
            self._launcher = launcher()
            self._workdir = worker_folder(self._launcher.scratch, "lambdas-")
            request = {
                "server": "lambdas",
                "limits": dataclasses.asdict(Limits(cpu_seconds=CPU_SECONDS, memory_bytes=MEMORY_BYTES)),
                "workdir": self._workdir,
                "allow_unconfined": settings.current().checkers.allow_unconfined,
            }
            self.pid = self._launcher.spawn(request, stdin_read, stdout_write, stderr)
        except CheckerError:
            os.close(stdin_write)
            os.close(stdout_read)
            raise
        finally:
            for descriptor in (stdin_read, stdout_write, stderr):
                os.close(descriptor)
        self._stdin = os.fdopen(stdin_write, "wb")
        self._stdout = stdout_read
        self._buffer, self._read_to = b"", 0
        self._selector = selectors.DefaultSelector()
        self._selector.register(stdout_read, selectors.EVENT_READ)
        hello = _reply(self._waited(self._line(time.monotonic() + START_SECONDS))) or {}
        self.isolation = [str(line) for line in hello.get("isolation") or []]
        if hello.get("confined") is not True:
            self.close()
            self.refusal = (
                unconfined_refusal(self.isolation, "checker lambdas are")
                if self.isolation
                else ("the lambda worker process did not start properly")
            )
            raise CheckerError(self.refusal)

    def close(self) -> None:
        if self.pid is None:
            return
        self._launcher.kill(self.pid)  # through the launcher that forked it (a later one knows no such pid)
        self._launcher.wait(self.pid)
        self.pid = None
        if self._workdir is not None:
            remove_tree(self._workdir)
            self._workdir = None
        assert self._selector is not None
        self._selector.close()
        with contextlib.suppress(OSError):
            self._stdin.close()
        with contextlib.suppress(OSError):
            os.close(self._stdout)

    def _buffered(self) -> bytes | None:
        """A reply line read already, if any."""
        end = self._buffer.find(b"\n", self._read_to)
        if end < 0:
            return None
        line, self._read_to = self._buffer[self._read_to : end], end + 1
        return line

    def _line(self, deadline: float) -> Reading[bytes | None]:
        """The next reply line; None when none came before the deadline, b"" when the worker ended."""
        line = self._buffered()
        while line is None:
            self._buffer, self._read_to = self._buffer[self._read_to :], 0
            if not (yield deadline):
                return None
            chunk = os.read(self._stdout, 1 << 20)
            if not chunk or len(self._buffer) > MAX_REPLY_BYTES:
                return b""  # the worker ended (or sent more than any verdict's reply)
            self._buffer += chunk
            line = self._buffered()
        return line

    def evaluate(self, calls: list[Call]) -> list[Outcome]:
        """Each call's outcome, in order. A call past its limit ends the worker; the calls after it go to
        a new one."""
        return self._waited(self._evaluating(calls))

    async def evaluate_async(self, calls: list[Call]) -> list[Outcome]:
        """evaluate, awaiting the worker's replies on the running event loop."""
        import asyncio

        loop = asyncio.get_running_loop()
        evaluating = self._evaluating(calls)
        try:
            deadline = next(evaluating)
            while True:
                deadline = evaluating.send(await _readable(loop, self._stdout, deadline))
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]

    def _waited(self, reading: Reading[T]) -> T:
        """What the reading comes to, waiting here (blocking) whenever it waits for the worker."""
        try:
            deadline = next(reading)
            while True:
                assert self._selector is not None  # a worker is running: reading waits for its output
                deadline = reading.send(bool(self._selector.select(max(0.0, deadline - time.monotonic()))))
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]

    def _evaluating(self, calls: list[Call]) -> Reading[list[Outcome]]:
        outcomes: dict[int, Outcome] = {}
        waiting = list(range(len(calls)))
        while waiting:
            waiting = yield from self._round(calls, waiting, outcomes)
        return [outcomes[index] for index in range(len(calls))]

    def _round(
        self, calls: list[Call], waiting: list[int], outcomes: dict[int, Outcome]
    ) -> Reading[list[int]]:
        """Send the waiting calls, read their outcomes; the calls left to send again."""
        sendable: list[int] = []
        for index in waiting:
            refusal = _refusal(calls[index])
            if refusal is None:
                sendable.append(index)
            else:
                outcomes[index] = (None, refusal)
        later: list[int] = []
        batch = _batch(calls, sendable)  # one encoding for all: one per call took 5 us each
        while len(batch) > MAX_BATCH_CHARS and len(sendable) > 1:  # the worker reads a batch whole
            sendable, later = sendable[: len(sendable) // 2], sendable[len(sendable) // 2 :] + later
            batch = _batch(calls, sendable)
        if not sendable:
            return later
        if self.pid is not None and not self._launcher.alive:  # the worker ended with its launcher
            self.close()
        if self.pid is None:
            try:
                self._start()
            except CheckerError as exc:  # the launcher could not start: each verdict says why
                outcomes.update((index, (None, exc)) for index in sendable)
                return later
        try:
            self._stdin.write(f"{batch}\n".encode())
            self._stdin.flush()
        except OSError:
            pass  # the worker is gone: its first outcome says so
        charges = _Charges()
        started = time.monotonic()  # when the worker began the call it is on
        for position, index in enumerate(sendable):
            call = calls[index]
            line, why = self._buffered(), ""  # a reply read already: no limit to work out
            if line is None:
                charges.apply()
                limit, why = _limit(call)
                line = yield from self._line(started + limit)
            reply = _reply(line)
            if reply is None:  # past its limit, or the worker ended: it is not asked again
                charges.add(call, time.monotonic() - started)
                charges.apply()
                ended = "the lambda worker process ended while judging it"
                outcomes[index] = (None, InvalidValue(why if line is None else ended))
                self.close()
                self.killed += 1
                return sendable[position + 1 :] + later
            started = time.monotonic()
            charges.add(call, float(reply.get("s", 0.0)))
            outcomes[index] = (reply.get("v"), None) if reply.get("ok") is True else (None, _error(reply))
        charges.apply()
        return later


async def _readable(loop: asyncio.AbstractEventLoop, descriptor: int, deadline: float) -> bool:
    """Whether the descriptor became readable before the deadline (the loop serves others meanwhile)."""
    ready: asyncio.Future[bool] = loop.create_future()

    def settle(readable: bool) -> None:
        if not ready.done():
            ready.set_result(readable)

    loop.add_reader(descriptor, settle, True)
    timer = loop.call_later(max(0.0, deadline - time.monotonic()), settle, False)
    try:
        return await ready
    finally:
        timer.cancel()
        loop.remove_reader(descriptor)


def _batch(calls: list[Call], indices: list[int]) -> str:
    return json.dumps([calls[index].as_json() for index in indices])


class _Charges:
    """The seconds of a batch's calls, by LVE, taken from the budgets together."""

    def __init__(self) -> None:
        self.by_lve: dict[str | None, float] = {}

    def add(self, call: Call, seconds: float) -> None:
        if call.charged_here:
            self.by_lve[call.lve] = self.by_lve.get(call.lve, 0.0) + seconds

    def apply(self) -> None:
        budget = command_budget()
        for lve, seconds in self.by_lve.items():
            budget.add(seconds, lve)
        self.by_lve.clear()


def _reply(line: bytes | None) -> dict[str, Any] | None:
    if line is None:
        return None
    try:
        reply = json.loads(line)
    except ValueError:
        return None
    return reply if isinstance(reply, dict) else None


def _left(call: Call) -> tuple[float, float]:
    budget, limits = command_budget(), settings.current().checkers
    lve_left = (
        limits.lve_budget - budget.by_lve.get(call.lve, 0.0) if call.lve is not None else limits.lve_budget
    )
    return lve_left, limits.command_budget - budget.spent


def _refusal(call: Call) -> CheckerError | None:
    """A batched call whose LVE's budget (or the command's) is spent is not sent."""
    lve_left, command_left = _left(call)
    if not call.charged_here or min(lve_left, command_left) > 0:
        return None
    limits = settings.current().checkers
    return CheckerError(
        exhausted("its checker", lve_left, command_left, limits.lve_budget, limits.command_budget)
    )


def _limit(call: Call) -> tuple[float, str]:
    """How long the call may take, and what to say when it takes longer."""
    lve_left, command_left = _left(call)
    if min(lve_left, command_left) >= VERDICT_SECONDS:
        return (
            VERDICT_SECONDS,
            f"the lambda did not end within {VERDICT_SECONDS:g} s (its worker was stopped)",
        )
    limits = settings.current().checkers
    return max(0.0, min(lve_left, command_left)), exhausted(
        "its checker", lve_left, command_left, limits.lve_budget, limits.command_budget
    )


class _Workers(threading.local):
    worker: LambdaWorker | None = None
    collecting: list[Call] | None = None  # judge_batched's first pass: the calls it collects
    prepared: list[Outcome] | None = None  # its second pass: this verdict's outcome


_workers = _Workers()


def worker() -> LambdaWorker:
    """This thread's lambda worker (the event loop's or replay's; a thread judging a slow LVE has its own)."""
    if _workers.worker is None:
        _workers.worker = LambdaWorker()
    return _workers.worker


class _Collected(BaseException):
    """Ends judge_batched's first pass of a verdict at its lambda call (not an Exception: no checker code
    between the verdict and the call may take it for a failure)."""


class WorkerLambda:
    """A checker lambda, called like the function it stands for, evaluated in the lambda worker."""

    def __init__(self, source: str, reduce: Reduce, decides: bool = False) -> None:
        self.source = source
        self.reduce = reduce
        # Its checker's is_safe returns its value as it is, and judging leaves a boolean as it is: in a batch
        # its answer is the verdict, and the checker is not run a second time to finish it.
        self.decides = decides

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        collecting, prepared = _workers.collecting, _workers.prepared
        if collecting is not None:
            lve = verdict_lve()
            collecting.append(Call(self.source, self.reduce, list(args), kwargs, lve, True, self.decides))
            raise _Collected
        if prepared:
            outcome = prepared.pop(0)
        else:
            [outcome] = worker().evaluate(
                [Call(self.source, self.reduce, list(args), kwargs, verdict_lve(), False)]
            )
        value, error = outcome
        if error is not None:
            raise error
        return value


def judge_batched(verdicts: list[Callable[[], T]], are_checkers: bool = False) -> list[T | Exception]:
    """Each verdict's value or the exception it raised, with the lambda calls of all of them evaluated in one
    batch: a first pass collects each verdict's call (up to it), a second finishes each with its outcome.
    A verdict that failed before its call fails again the same way in the second pass. `are_checkers`:
    each verdict's value is its checker's is_safe as it returned it, so that a verdict decided by its one
    call's answer (WorkerLambda.decides) needs no second pass."""
    calls_of, flat = _collected(verdicts)
    return _finished(verdicts, calls_of, worker().evaluate(flat) if flat else [], are_checkers)


async def judge_batched_async(
    verdicts: list[Callable[[], T]], are_checkers: bool = False
) -> list[T | Exception]:
    """judge_batched, the worker's replies awaited on the running event loop."""
    calls_of, flat = _collected(verdicts)
    outcomes = await worker().evaluate_async(flat) if flat else []
    return _finished(verdicts, calls_of, outcomes, are_checkers)


def _collected(verdicts: list[Callable[[], Any]]) -> tuple[list[list[Call]], list[Call]]:
    """Each verdict's lambda calls, found by running it up to its call; and all of them in order."""
    calls_of: list[list[Call]] = []
    for verdict in verdicts:
        calls: list[Call] = []
        _workers.collecting = calls
        try:
            verdict()
        except (_Collected, Exception):
            pass
        finally:
            _workers.collecting = None
        calls_of.append(calls)
    return calls_of, [call for calls in calls_of for call in calls]


def _finished(
    verdicts: list[Callable[[], T]], calls_of: list[list[Call]], outcomes: list[Outcome], are_checkers: bool
) -> list[T | Exception]:
    """Each verdict finished with its calls' outcomes (see judge_batched)."""
    given = iter(outcomes)
    results: list[T | Exception] = []
    for verdict, calls in zip(verdicts, calls_of, strict=True):
        prepared = [next(given) for _call in calls]
        if are_checkers and len(calls) == 1 and calls[0].decides and prepared[0][1] is None:
            results.append(bool(prepared[0][0]))  # type: ignore[arg-type]  # T is bool here
            continue
        _workers.prepared = prepared
        try:
            results.append(verdict())
        except Exception as exc:
            results.append(exc)
        finally:
            _workers.prepared = None
    return results
