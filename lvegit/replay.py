"""Replay: re-judge every recorded instance with the LVE's checker, no model involved."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from lvegit.checkers import BaseChecker, CheckerFactory, MultiRunBaseChecker
from lvegit.errors import CheckerError, CheckerUnavailable, LVEError, LvegitError
from lvegit.instances import Instance, read_instances
from lvegit.problems import Problems
from lvegit.prompt import Message, fill_holes, fill_messages, with_trailing_hole
from lvegit.repo import Repository
from lvegit.spec import LVE, METADATA_FIELDS, load_lve

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


def conversations(
    lve: LVE, params: dict[str, Any], response: Any
) -> list[tuple[list[Message], list[Message]]]:
    """(prompt as sent, conversation with the recorded responses) per run; one pair for a single prompt."""
    if lve.runs is None:
        prompts = [lve.prompt or []]
        responses = [response]
    else:
        prompts = [run.messages for run in lve.run_sequence()]
        if not isinstance(response, list) or len(response) != len(prompts):
            raise LVEError(f"the response must be a list with one entry per run ({len(prompts)} runs)")
        responses = response
    pairs = []
    try:
        for messages, recorded in zip(prompts, responses, strict=True):
            prompt_in = with_trailing_hole(fill_messages(messages, params))
            pairs.append((prompt_in, fill_holes(prompt_in, recorded)))
    except ValueError as exc:  # the instance does not fit the prompt (also TemplateError)
        raise LVEError(str(exc)) from None
    return pairs


def judge(lve: LVE, checker: BaseChecker, params: dict[str, Any], response: Any) -> bool:
    """The checker's verdict on one recorded (or fresh) response."""
    pairs = conversations(lve, params, response)
    if isinstance(checker, MultiRunBaseChecker) != lve.is_multi_run:
        needs = "a multi-run checker" if lve.is_multi_run else "a single-run checker"
        raise CheckerError(f"{lve.test_file}: this prompt form needs {needs}; {lve.checker_name} is not one")
    if isinstance(checker, MultiRunBaseChecker):
        return checker.invoke_check_runs([p for p, _ in pairs], [c for _, c in pairs], params)
    prompt_in, prompt_out = pairs[0]
    return checker.invoke_check(prompt_in, prompt_out, params)


def _replay_instance(lve: LVE, factory: CheckerFactory, instance: Instance) -> ReplayResult:
    def result(status: Status, replayed: bool | None = None, reason: str | None = None) -> ReplayResult:
        return ReplayResult(lve.rel, instance.file, instance.line, instance.passed, replayed, status, reason)

    params, _model_args = lve.split_args(instance.args)
    try:
        checker = factory.for_args(instance.args)
        skip = checker.replay_skip_reason(instance.response)
        if skip is not None:
            return result("skipped", reason=skip)
        verdict = judge(lve, checker, params, instance.response)
    except CheckerUnavailable as exc:
        return result("skipped", reason=str(exc))
    except LvegitError as exc:
        return result("error", reason=str(exc))
    except (Exception, SystemExit) as exc:  # a checker's own failure costs only this instance
        return result("error", reason=f"{type(exc).__name__}: {exc}")
    return result("reproduced" if verdict == instance.passed else "mismatch", verdict)


def replay_lve(repo: Repository, lve_dir: Path) -> list[ReplayResult]:
    lve, problems, _text = load_lve(repo, lve_dir)
    rel = repo.relative(lve_dir)
    blocking = [p for p in problems.errors if p.field.split(".")[0].split("[")[0] not in METADATA_FIELDS]
    if lve is None or blocking:
        first = (blocking or problems.errors)[0]
        return [
            ReplayResult(rel, first.file, first.line, None, None, "error", f"invalid LVE: {first.render()}")
        ]
    results: list[ReplayResult] = []
    with CheckerFactory(lve) as factory:
        for path in lve.instance_files():
            shown = repo.relative(path)
            bad_lines = Problems(shown)
            instances = read_instances(path, shown, bad_lines)
            results.extend(
                ReplayResult(rel, p.file, p.line, None, None, "error", p.render()) for p in bad_lines.errors
            )
            results.extend(_replay_instance(lve, factory, instance) for instance in instances)
    return sorted(results, key=lambda r: (r.file, r.line or 0))


def summarize(results: list[ReplayResult]) -> dict[str, int]:
    return {status: sum(r.status == status for r in results) for status in STATUSES}
