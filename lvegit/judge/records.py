"""The typed, versioned records of `validate`, `replay` and `check --format json`: one document each
(schemas `lvegit-validate`, `lvegit-replay`, `lvegit-check`, version 1, shipped in lvegit/schemas/). Their
parts (findings, replay results and their counts) are the ones the Action's results file holds."""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import Field

from lvegit.base.records import Record, write_schemas
from lvegit.judge.results import LVECheck, LVEReport, ReplayResult, invalid_count, summarize
from lvegit.lve.problems import Problem

VERSION: Final = 1


class ReplayCounts(Record):
    reproduced: int
    mismatch: int
    skipped: int
    error: int


class CheckRecord(Record):
    path: str
    valid: bool
    errors: list[Problem]
    warnings: list[Problem]
    replay: ReplayCounts
    instances: list[ReplayResult]


class ValidationRecord(Record):
    path: str
    valid: bool
    errors: list[Problem]
    warnings: list[Problem]


class ValidationSummary(Record):
    valid: int
    invalid: int


class ValidateDocument(Record):
    """What `lvegit validate --format json` prints."""

    schema_name: Literal["lvegit-validate"] = Field(alias="schema")
    version: Literal[1]
    lves: list[ValidationRecord]
    summary: ValidationSummary


class ReplaySummary(ReplayCounts):
    # the reproduced verdicts that are invalid (the output could not be judged); printed where there are any
    invalid: int = 0


class ReplayDocument(Record):
    """What `lvegit replay --format json` prints."""

    schema_name: Literal["lvegit-replay"] = Field(alias="schema")
    version: Literal[1]
    instances: list[ReplayResult]
    summary: ReplaySummary


class CheckSummary(Record):
    valid: int
    invalid: int
    reproduced: int
    mismatch: int
    skipped: int
    error: int


class CheckDocument(Record):
    """What `lvegit check --format json` prints."""

    schema_name: Literal["lvegit-check"] = Field(alias="schema")
    version: Literal[1]
    lves: list[CheckRecord]
    summary: CheckSummary


DOCUMENTS: Final[dict[str, type[Record]]] = {
    "validate": ValidateDocument,
    "replay": ReplayDocument,
    "check": CheckDocument,
}


def validate_document(reports: list[LVEReport]) -> ValidateDocument:
    invalid = sum(not report.valid for report in reports)
    return ValidateDocument(
        schema="lvegit-validate",
        version=VERSION,
        lves=[
            ValidationRecord(path=r.path, valid=r.valid, errors=r.errors, warnings=r.warnings)
            for r in reports
        ],
        summary=ValidationSummary(valid=len(reports) - invalid, invalid=invalid),
    )


def replay_document(results: list[ReplayResult]) -> dict[str, Any]:
    """The document as JSON; its summary's invalid count only where there are any."""
    invalid = invalid_count(results)
    summary = ReplaySummary(**summarize(results), invalid=invalid)
    document = ReplayDocument(schema="lvegit-replay", version=VERSION, instances=results, summary=summary)
    return document.model_dump(
        mode="json", by_alias=True, exclude=None if invalid else {"summary": {"invalid"}}
    )


def check_document(checks: list[LVECheck]) -> CheckDocument:
    invalid = sum(not check.validation.valid for check in checks)
    replayed = summarize([result for check in checks for result in check.replay])
    return CheckDocument(
        schema="lvegit-check",
        version=VERSION,
        lves=[
            CheckRecord(
                path=check.path,
                valid=check.validation.valid,
                errors=check.validation.errors,
                warnings=check.validation.warnings,
                replay=ReplayCounts(**summarize(check.replay)),
                instances=check.replay,
            )
            for check in checks
        ],
        summary=CheckSummary(valid=len(checks) - invalid, invalid=invalid, **replayed),
    )


if __name__ == "__main__":  # python -m lvegit.judge.records: rewrite their shipped schemas
    write_schemas(DOCUMENTS, VERSION)
