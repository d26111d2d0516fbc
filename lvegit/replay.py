"""Replay: re-judge every recorded instance with the LVE's checker, no model involved."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from lvegit.cache import Outcome, VerdictCache
from lvegit.checkers import CheckerFactory
from lvegit.conversation import judge_recorded
from lvegit.errors import CheckerUnavailable, LvegitError
from lvegit.instances import Instance, read_instances
from lvegit.problems import Problems
from lvegit.repo import Repository
from lvegit.spec import LVE, blocking_errors, load_lve

Status = Literal["reproduced", "mismatch", "skipped", "error"]
STATUSES: tuple[Status, ...] = ("reproduced", "mismatch", "skipped", "error")


@dataclass(frozen=True)
class ReplayResult:
    lve: str
    file: str
    line: int | None
    recorded: bool | None
    replayed: bool | None
    status: Status
    reason: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "lve": self.lve,
            "file": self.file,
            "line": self.line,
            "recorded": self.recorded,
            "replayed": self.replayed,
            "status": self.status,
            "reason": self.reason,
        }


def _result(lve: LVE, instance: Instance, outcome: Outcome) -> ReplayResult:
    """The replay result a checker's outcome gives (its own, or the cached one)."""

    def result(status: Status, replayed: bool | None = None, reason: str | None = None) -> ReplayResult:
        return ReplayResult(lve.rel, instance.file, instance.line, instance.passed, replayed, status, reason)

    if outcome.skip is not None:
        return result("skipped", reason=outcome.skip)
    if outcome.verdict == instance.passed:
        return result("reproduced", outcome.verdict)
    return result("mismatch", outcome.verdict, outcome.note)


def _replay_instance(
    lve: LVE, factory: CheckerFactory, instance: Instance
) -> tuple[ReplayResult, Outcome | None]:
    """The result, and the checker's outcome when it may be cached (not what depends on the machine)."""

    def failed(status: Status, reason: str) -> tuple[ReplayResult, None]:
        return ReplayResult(
            lve.rel, instance.file, instance.line, instance.passed, None, status, reason
        ), None

    params, _model_args = lve.split_args(instance.args)
    try:
        checker = factory.for_args(instance.args)
        skip = checker.replay_skip_reason(instance.response)
        if skip is not None:
            outcome = Outcome(skip=skip)
        else:
            verdict = judge_recorded(lve, checker, params, instance.response)
            note = (
                f"judged by {checker.judged_with}; the recording may come from another model"
                if checker.judged_with
                else None
            )
            outcome = Outcome(verdict=verdict, note=note)
    except CheckerUnavailable as exc:
        return failed("skipped", str(exc))
    except LvegitError as exc:
        return failed("error", str(exc))
    except (Exception, SystemExit) as exc:  # a checker's own failure costs only this instance
        return failed("error", f"{type(exc).__name__}: {exc}")
    return _result(lve, instance, outcome), outcome


def _prepare(factory: CheckerFactory, instances: list[Instance]) -> None:
    """Let each checker see all its responses at once (model-based checkers classify them in batches)."""
    groups: dict[int, tuple[Any, list[Any]]] = {}
    for instance in instances:
        try:
            checker = factory.for_args(instance.args)
        except Exception:  # reported per instance by _replay_instance
            continue
        groups.setdefault(id(checker), (checker, []))[1].append(instance.response)
    for checker, responses in groups.values():
        try:
            checker.prepare(responses)
        except Exception:  # batching is an optimisation: each instance is judged again alone
            continue


def replay_lve(repo: Repository, lve_dir: Path, cache: VerdictCache | None = None) -> list[ReplayResult]:
    """Replay one LVE's instances. With a cache, an instance whose checker and stored response are
    unchanged gets its verdict from there, and the checker is built only for the others."""
    lve, problems, _text = load_lve(repo, lve_dir)
    rel = repo.relative(lve_dir)
    blocking = blocking_errors(problems)
    if lve is None or blocking:
        first = (blocking or problems.errors)[0]
        return [ReplayResult(rel, first.file, first.line, None, None, "error", f"invalid LVE: {first.what}")]
    results: list[ReplayResult] = []
    instances: list[Instance] = []
    for path in lve.instance_files():
        shown = repo.relative(path)
        bad_lines = Problems(shown)
        instances.extend(read_instances(path, shown, bad_lines))
        results.extend(
            ReplayResult(rel, p.file, p.line, None, None, "error", p.what) for p in bad_lines.errors
        )
    to_judge: list[tuple[Instance, str | None]] = []
    for instance in instances:
        key = cache.key(lve, instance) if cache is not None else None
        cached = cache.get(key) if cache is not None and key is not None else None
        if cached is not None:
            results.append(_result(lve, instance, cached))
        else:
            to_judge.append((instance, key))
    if to_judge:
        with CheckerFactory(lve) as factory:
            _prepare(factory, [instance for instance, _key in to_judge])
            for instance, key in to_judge:
                result, outcome = _replay_instance(lve, factory, instance)
                results.append(result)
                if cache is not None and key is not None and outcome is not None:
                    cache.put(key, outcome)
    return sorted(results, key=lambda r: (r.file, r.line or 0))


def summarize(results: list[ReplayResult]) -> dict[str, int]:
    return {status: sum(r.status == status for r in results) for status in STATUSES}
