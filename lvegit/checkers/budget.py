"""The time an LVE's contributed checking may take: LVEGIT_CHECKER_LVE_BUDGET per LVE and
LVEGIT_CHECKER_BUDGET per command (settings.CheckerSettings).

Two kinds of checking are contributed work: custom checker code, timed in its sandboxed worker
(sandbox.py), and lvegit's own checkers at work on the strings an LVE wrote (lambdas, patterns, texts),
timed here. Each verdict is bounded on its own (a lambda's work budget, a regex's timeout, a size limit);
these budgets bound how many such verdicts a pull request can make a job wait for.
"""

from __future__ import annotations

import threading
import time

from lvegit.base import settings
from lvegit.base.errors import CheckerError


class Budget:
    """Seconds that contributed checking has taken in one command, by every worker and LVE together: one
    slow verdict is bounded by its own limit, a thousand of them by LVEGIT_CHECKER_BUDGET. `by_lve`: the
    seconds per LVE, by every path that judges it (on the loop, in a thread, in any worker process): a
    command that judges an LVE twice (the Action validates, replays, then runs it live) has one budget
    for it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.spent = 0.0
        self.by_lve: dict[str, float] = {}

    def add(self, seconds: float, lve: str | None = None) -> None:
        with self._lock:
            self.spent += seconds
            if lve is not None:
                self.by_lve[lve] = self.by_lve.get(lve, 0.0) + seconds


_COMMAND: list[tuple[settings.Settings, Budget]] = []  # the settings object of one command, its budget
_COMMAND_LOCK = threading.Lock()


def command_budget() -> Budget:
    """The budget of the command running now: each command configures settings objects of its own
    (cli.py), equal to the last one's or not."""
    current = settings.current()
    known = _COMMAND[:1]  # read without the lock: a verdict asks for it every time
    if known and known[0][0] is current:
        return known[0][1]
    with _COMMAND_LOCK:
        if not _COMMAND or _COMMAND[0][0] is not current:
            _COMMAND[:] = [(current, Budget())]
        return _COMMAND[0][1]


def exhausted(
    what: str, lve_left: float, command_left: float, lve_budget: float, command_budget: float
) -> str:
    """Why a verdict is not given: which of the two budgets (seconds) `what` used up."""
    which = (
        f"{lve_budget:g} s for each LVE, LVEGIT_CHECKER_LVE_BUDGET"
        if lve_left <= command_left
        else f"{command_budget:g} s for the whole command, LVEGIT_CHECKER_BUDGET"
    )
    return f"not judged: {what} used up its time budget ({which})"


class _Judging(threading.local):
    lve: str | None = None  # the LVE whose verdict this thread is giving
    deadline: float | None = None  # when (time.monotonic) what is left of its budgets runs out
    left: tuple[float, float] = (0.0, 0.0)  # what was left of them when it began: the LVE's, the command's


_judging = _Judging()


def verdict_lve() -> str | None:
    """The LVE of the verdict this thread is giving (a lambda worker's time is taken from its budget)."""
    return _judging.lve


def verdict_seconds_left() -> float | None:
    """What is left of the budgets of the verdict this thread is giving (None: it gives none): each step
    of a verdict (a pattern matched against each of 200 tool calls) is bounded by it, not only the next
    verdict."""
    deadline = _judging.deadline
    return None if deadline is None else deadline - time.monotonic()


def budget_spent() -> CheckerError:
    """The error of a verdict that ran out of its budgets while it was given, naming the one."""
    limits = settings.current().checkers
    return CheckerError(exhausted("its checker", *_judging.left, limits.lve_budget, limits.command_budget))


class contributed_verdict:
    """One verdict of lvegit's own checker on an LVE's strings, taken from the LVE's and the command's
    budgets; refused once either is spent. (A class: a generator-based context manager cost as much as
    the verdict it timed.)"""

    def __init__(self, lve: str) -> None:
        self.lve = lve
        self.budget = command_budget()
        self.started = 0.0

    def __enter__(self) -> None:
        limits = settings.current().checkers
        lve_left = limits.lve_budget - self.budget.by_lve.get(self.lve, 0.0)
        command_left = limits.command_budget - self.budget.spent
        if min(lve_left, command_left) <= 0:
            why = exhausted("its checker", lve_left, command_left, limits.lve_budget, limits.command_budget)
            raise CheckerError(why)
        _judging.lve = self.lve
        self.started = time.monotonic()
        _judging.deadline, _judging.left = (
            self.started + min(lve_left, command_left),
            (lve_left, command_left),
        )

    def __exit__(self, *exc_info: object) -> None:
        _judging.lve = _judging.deadline = None
        self.budget.add(time.monotonic() - self.started, self.lve)
