"""`lvegit run`: which attempts to make for the selected LVEs, and what they add up to per instance."""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple, Protocol

from lvegit.base.errors import UsageError
from lvegit.lve.repo import Repository
from lvegit.lve.spec import blocking_errors, load_lve
from lvegit.run.attempt import Attempt, attempt_id
from lvegit.run.runner import Task


def parse_shard(text: str) -> tuple[int, int]:
    """`I/N` (1-based) as (index, count)."""
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise UsageError(f"--shard takes I/N, for example 2/4, not {text!r}") from None
    if not 1 <= index <= count:
        raise UsageError(f"--shard {text}: I must be between 1 and N")
    return index, count


def in_shard(rel: str, index: int, count: int) -> bool:
    """Deterministic on every machine: a hash of the LVE's path decides its shard."""
    return int(hashlib.sha256(rel.encode()).hexdigest(), 16) % count == index - 1


@dataclass
class Plan:
    tasks: list[Task] = field(default_factory=list)
    invalid: list[tuple[str, str]] = field(default_factory=list)  # (LVE, why it cannot run)


def plan_reruns(
    repo: Repository,
    lve_dirs: list[Path],
    model: str | None,
    repeat: int,
    append: bool,
) -> Plan:
    """The whole plan at once (a batch run's rounds need every task); see `iter_tasks`."""
    plan = Plan()
    plan.tasks = list(iter_tasks(repo, lve_dirs, model, repeat, append, plan.invalid))
    return plan


def iter_tasks(
    repo: Repository,
    lve_dirs: Iterable[Path],
    model: str | None,
    repeat: int,
    append: bool,
    invalid: list[tuple[str, str]],
    keep_loaded: bool = True,
) -> Iterator[Task]:
    """One task per original recording and repetition, LVE by LVE as they are read, so that a large run
    starts its first request at once and never holds its whole plan; the LVEs that cannot run go to
    `invalid` (LVE, why). Lines that a run appended (their run_info says which recording they reproduce) are
    output, not input: re-running them would append again forever. Without `keep_loaded`, an LVE is
    let go of once its tasks are taken (a run over a corpus; later stages of a check read it again)."""
    for lve_dir in lve_dirs:
        lve, problems, _ = load_lve(repo, lve_dir)
        blocking = blocking_errors(problems)
        if lve is None or blocking:
            first = (blocking or problems.errors)[0]
            invalid.append((repo.relative(lve_dir), first.render()))
            continue
        model_id = model or lve.model
        if not model_id:
            invalid.append((lve.rel, f"{lve.test_file}: model: no model to run (give --model)"))
            continue
        if append and model_id != lve.model:
            raise UsageError(
                f"--append with --model {model_id}: {lve.rel} holds instances of {lve.model}; "
                "create the LVE for the other model with lvegit new and record there"
            )
        for recorded in lve.recorded():
            path, shown = recorded.path, recorded.shown
            for instance in recorded.instances:
                if instance.reproduces is not None:
                    continue
                content = json.dumps(instance.data, sort_keys=True)
                for repetition in range(repeat):
                    attempt = Attempt(
                        id=attempt_id(lve.rel, shown, content, model_id, repetition),
                        lve=lve.rel,
                        model=model_id,
                        args=instance.args,
                        repetition=repetition,
                        source_file=shown,
                        source_line=instance.line,
                        recorded=instance.passed,
                    )
                    yield Task(lve, attempt, path if append else None)
            invalid.extend((lve.rel, problem.render()) for problem in recorded.problems.errors)
        lve.forget_recorded()  # the tasks keep each instance's args; the rest of the records can go
        if not keep_loaded:
            repo.forget(lve_dir)


def wilson_interval(unsafe: int, runs: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of a proportion (here: how often the instance is unsafe)."""
    if runs == 0:
        return 0.0, 1.0
    p = unsafe / runs
    denominator = 1 + z * z / runs
    centre = (p + z * z / (2 * runs)) / denominator
    spread = z * math.sqrt(p * (1 - p) / runs + z * z / (4 * runs * runs)) / denominator
    return max(0.0, centre - spread), min(1.0, centre + spread)


@dataclass
class InstanceResult:
    lve: str
    file: str | None
    line: int | None
    recorded: bool | None
    verdicts: list[bool] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    invalid: int = 0  # attempts whose output could not be judged (recorded: None, when the recording's was)
    # an environment LVE's: each attempt's utility check that judged (the user's task done or not)
    utility: list[bool] = field(default_factory=list)

    @property
    def unsafe(self) -> int:
        return sum(not verdict for verdict in self.verdicts)

    @property
    def agree(self) -> bool | None:
        """Whether every new verdict equals the recorded one, an invalid one included (None when none
        completed)."""
        if not self.verdicts and not self.invalid:
            return None
        if self.invalid and self.recorded is not None:
            return False
        return all(verdict == self.recorded for verdict in self.verdicts)

    @property
    def interval_95(self) -> tuple[float, float]:
        """The 95% interval of how often the instance is unsafe, rounded to 4 places."""
        low, high = wilson_interval(self.unsafe, len(self.verdicts))
        return round(low, 4), round(high, 4)


class Judged(Protocol):
    """An instance's live results, as `run` (InstanceResult) and the Action's results file hold them."""

    @property
    def agree(self) -> bool | None: ...

    @property
    def errors(self) -> Sequence[str]: ...


class Tally(NamedTuple):
    agree: int
    disagree: int
    error: int
    skipped: int


def bucket(result: Judged) -> str:
    """Where a live result counts (a field of Tally): it disagrees when a new verdict differs from the
    recorded one; else it is an error when an attempt failed; else skipped when nothing judged it; else it
    agrees."""
    if result.agree is False:
        return "disagree"
    if result.errors:
        return "error"
    return "skipped" if result.agree is None else "agree"


def tally(results: Iterable[Judged]) -> Tally:
    """The one count of live results (`run`, `report` and the Action): each instance counts once."""
    counted = Counter(bucket(result) for result in results)
    return Tally(*(counted[name] for name in Tally._fields))


@dataclass
class Outcomes:
    """What finished attempts add up to, per instance, taken in as each attempt ends: a large run keeps
    this, not its attempts. With `emit`, each instance's result is handed on, in the order the attempts
    were planned, as soon as its attempts and those of every instance planned before it have ended, and
    is let go: the run holds the results of the instances in flight only."""

    emit: Callable[[InstanceResult], None] | None = None
    by_key: dict[tuple[str, str | None, int | None], InstanceResult] = field(default_factory=dict)
    attempts: int = 0
    own_errors: bool = False  # an attempt failed for a reason of its own, not its model's service
    _waiting: dict[tuple[str, str | None, int | None], int] = field(default_factory=dict)  # attempts to end
    _order: deque[tuple[str, str | None, int | None]] = field(default_factory=deque)  # planned, not handed on

    def expect(self, attempt: Attempt) -> InstanceResult:
        """The instance's results, placed in the order attempts are planned (not the order they end in)."""
        key = (attempt.lve, attempt.source_file, attempt.source_line)
        result = self.by_key.get(key)
        if result is None:
            result = self.by_key[key] = InstanceResult(attempt.lve, *key[1:], attempt.recorded)
            self._order.append(key)
        self._waiting[key] = self._waiting.get(key, 0) + 1
        return result

    def add(self, attempt: Attempt) -> None:
        self.attempts += 1
        key = (attempt.lve, attempt.source_file, attempt.source_line)
        result = self.by_key[key] if key in self._waiting else self.expect(attempt)
        self._waiting[key] -= 1
        if attempt.status == "complete" and attempt.verdict is not None:
            result.verdicts.append(attempt.verdict)
        elif attempt.status == "complete":  # a verdict that is invalid: the output cannot be judged
            result.invalid += 1
        elif attempt.status != "skipped":
            result.errors.append(attempt.error or f"status {attempt.status}")
        if attempt.status == "complete" and attempt.utility is not None:
            result.utility.append(attempt.utility)
        if attempt.error and attempt.error_source != "model":
            self.own_errors = True
        if self.emit is not None:
            self._hand_on()

    def _hand_on(self) -> None:
        assert self.emit is not None
        while self._order and not self._waiting[self._order[0]]:
            key = self._order.popleft()
            del self._waiting[key]
            self.emit(self.by_key.pop(key))

    @property
    def results(self) -> list[InstanceResult]:
        return list(self.by_key.values())

    @classmethod
    def of(cls, attempts: Iterable[Attempt]) -> Outcomes:
        outcomes = cls()
        for attempt in attempts:
            outcomes.add(attempt)
        return outcomes


def by_instance(attempts: list[Attempt]) -> list[InstanceResult]:
    return Outcomes.of(attempts).results
