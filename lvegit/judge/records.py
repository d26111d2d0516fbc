"""The typed, versioned record of `lvegit check --format json`: a CheckDocument (schema `lvegit-check`,
version 1, shipped as lvegit/schemas/lvegit-check-v1.json). Its parts (findings, replay results and their
counts) are the ones the Action's results file holds for each LVE."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final, Literal

from pydantic import ConfigDict, Field

from lvegit.base.records import Record
from lvegit.judge.results import LVECheck, ReplayResult, summarize
from lvegit.lve.problems import Problem

SCHEMA: Final = "lvegit-check"
VERSION: Final = 1
SCHEMA_FILE = Path(__file__).resolve().parent.parent / "schemas" / f"{SCHEMA}-v{VERSION}.json"


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


class CheckSummary(Record):
    valid: int
    invalid: int
    reproduced: int
    mismatch: int
    skipped: int
    error: int


class CheckDocument(Record):
    """What `lvegit check --format json` prints."""

    model_config = ConfigDict(
        title=f"{SCHEMA} version {VERSION}", json_schema_extra={"$id": f"{SCHEMA}-v{VERSION}.json"}
    )

    schema_name: Literal["lvegit-check"] = Field(alias="schema")
    version: Literal[1]
    lves: list[CheckRecord]
    summary: CheckSummary


def check_document(checks: list[LVECheck]) -> CheckDocument:
    invalid = sum(not check.validation.valid for check in checks)
    replayed = summarize([result for check in checks for result in check.replay])
    return CheckDocument(
        schema=SCHEMA,
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


def json_schema() -> dict[str, Any]:
    """The JSON Schema of CheckDocument (shipped as SCHEMA_FILE)."""
    return CheckDocument.model_json_schema(by_alias=True)


if __name__ == "__main__":  # python -m lvegit.judge.records > lvegit/schemas/lvegit-check-v1.json
    import json

    print(json.dumps(json_schema(), indent=2))
