"""The records every command and renderer reads: validation findings, replay results, and one LVE's
check (both). Defined once here; the JSON forms (as_json) are what `--format json`, the cache and the
Action's results file hold."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from lvegit.base.output import count
from lvegit.lve.problems import RECORD_CONFIG, Problem, Severity

Status = Literal["reproduced", "mismatch", "skipped", "error"]
STATUSES: tuple[Status, ...] = ("reproduced", "mismatch", "skipped", "error")
FORMS: dict[str, tuple[str, str]] = {  # each status counted: one, many
    "reproduced": ("reproduced", "reproduced"),
    "mismatch": ("mismatch", "mismatches"),
    "skipped": ("skipped", "skipped"),
    "error": ("error", "errors"),
}


@dataclass(frozen=True)
class ReplayResult:
    __pydantic_config__ = RECORD_CONFIG

    lve: str
    file: str
    line: int | None
    recorded: bool | None
    replayed: bool | None
    status: Status
    reason: str | None = None

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


# The reason a reproduced instance carries where its verdict is an LLM judge's answer as a pull request
# recorded it and no judge was asked again (the live stage asks): a claim, not a reproduction.
CLAIMED = "claimed, not re-asked: the judge's answer as the pull request recorded it"


def verdict_word(passed: bool | None) -> str:
    return "?" if passed is None else "safe" if passed else "unsafe"


def unsafe_rate(unsafe: int, runs: int, interval: Sequence[float] | None) -> str:
    """`2/5 unsafe (95% CI 12%-77%)`: how often re-runs were unsafe; without `interval`, the count alone."""
    text = f"{unsafe}/{runs} unsafe"
    return text if interval is None else text + f" (95% CI {interval[0]:.0%}-{interval[1]:.0%})"


def summarize(results: list[ReplayResult]) -> dict[str, int]:
    return {status: sum(r.status == status for r in results) for status in STATUSES}


def replay_counts(summary: Mapping[str, int], every: bool = False) -> str:
    """`3 reproduced, 1 mismatch`: the statuses that occur (all of them with `every`)."""
    return ", ".join(count(number, *FORMS[status]) for status, number in summary.items() if number or every)


def invalid_count(results: list[ReplayResult]) -> int:
    """The reproduced verdicts that are invalid (the output could not be judged): neither safe nor unsafe."""
    return sum(r.status == "reproduced" and r.replayed is None for r in results)


def invalid_verdicts(results: list[ReplayResult]) -> str:
    """` (1 of them invalid)`: the reproduced verdicts that are invalid (the output could not be judged),
    counted apart from safe and unsafe; nothing where there are none."""
    invalid = invalid_count(results)
    return f" ({invalid} of them invalid)" if invalid else ""


@dataclass
class LVEReport:
    path: str
    errors: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not self.errors

    def as_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "valid": self.valid,
            "errors": [p.as_json() for p in self.errors],
            "warnings": [p.as_json() for p in self.warnings],
        }


@dataclass(frozen=True)
class LVECheck:
    """One LVE's validation findings and replay results."""

    validation: LVEReport
    replay: list[ReplayResult]

    @property
    def path(self) -> str:
        return self.validation.path

    @property
    def passed(self) -> bool:
        counts = summarize(self.replay)
        return self.validation.valid and not counts["mismatch"] and not counts["error"]

    def as_json(self) -> dict[str, Any]:
        return {
            **self.validation.as_json(),
            "replay": summarize(self.replay),
            "instances": [r.as_json() for r in self.replay],
        }

    @classmethod
    def from_json(cls, data: Any) -> LVECheck:
        """The record as_json wrote (from the verdict cache, which anything may have damaged); a
        ValueError when it is not exactly one."""
        record = _typed(data, _CHECK_FIELDS)

        def problems(severity: Severity) -> list[Problem]:
            found = [Problem(**_typed(p, _PROBLEM_FIELDS)) for p in record[f"{severity}s"]]
            if any(problem.severity != severity for problem in found):
                raise ValueError(f"a problem among the {severity}s is no {severity}")
            return found

        results = [ReplayResult(**_typed(item, _RESULT_FIELDS)) for item in record["instances"]]
        if any(result.status not in STATUSES for result in results):
            raise ValueError("unknown replay status")
        return cls(LVEReport(record["path"], problems("error"), problems("warning")), results)


_TEXT, _LINE, _VERDICT = (str,), (int, type(None)), (bool, type(None))
_CHECK_FIELDS = {
    "path": _TEXT,
    "valid": (bool,),
    "errors": (list,),
    "warnings": (list,),
    "replay": (dict,),
    "instances": (list,),
}
_PROBLEM_FIELDS = {"severity": _TEXT, "file": _TEXT, "field": _TEXT, "message": _TEXT, "line": _LINE}
_RESULT_FIELDS = {
    "lve": _TEXT,
    "file": _TEXT,
    "line": _LINE,
    "recorded": _VERDICT,
    "replayed": _VERDICT,
    "status": _TEXT,
    "reason": (str, type(None)),
}


def _typed(data: Any, fields: Mapping[str, tuple[type, ...]]) -> dict[str, Any]:
    """`data` when it is an object with exactly these fields, each of one of its types (exactly: a
    boolean is no line number); a ValueError otherwise."""
    if not isinstance(data, dict) or set(data) != set(fields):
        raise ValueError(f"not a record with the fields {', '.join(fields)}")
    for name, types in fields.items():
        if type(data[name]) not in types:
            raise ValueError(f"{name}: {type(data[name]).__name__} where {types} belongs")
    return data


@dataclass(frozen=True)
class Appended:
    """An instance a live re-run appended: the file (as shown), the verdict and the stored response."""

    __pydantic_config__ = RECORD_CONFIG

    file: str
    passed: bool | None
    response: Any


# A pull request's changes to one LVE (lvegit.github.review builds them).


@dataclass(frozen=True)
class AddedInstance:
    __pydantic_config__ = RECORD_CONFIG

    file: str  # as replay and live results name it: the LVE folder, then instances/NAME
    line: int
    passed: bool | None  # the recorded verdict; None where the line records none
    prompt: str  # the prompt filled with the instance's parameters, one `role: content` line per message
    response: str  # the stored response, as text (JSON for a structured one)
    judged: str | None = None  # what a checker's judge model answered, `judge: answer | answer`


def judge_said(judgement: Any) -> str | None:
    """A recorded judgement (of a checker's judge model) as one line, `judge: answer | answer`; None for
    none."""
    if not isinstance(judgement, dict) or not isinstance(judgement.get("answers"), list):
        return None
    return f"{judgement.get('judge')}: {' | '.join(map(str, judgement['answers']))}"


@dataclass(frozen=True)
class LVEChange:
    __pydantic_config__ = RECORD_CONFIG

    status: Literal["added", "modified", "renamed"]
    renamed_from: str | None
    changed: list[str]  # what else changed, in words: "test.json: prompt, tags", "checker code checker/x.py"
    instances_added: int
    instances_removed: int
    instances_unchanged: int
    added: list[AddedInstance]  # of the instances added, those that parse, in file and line order
