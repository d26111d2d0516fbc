"""The typed, versioned records of live results. `run --format json` and `report --format json` print a
RunDocument (schema `lvegit-run`, version 1), `record --format json` a RecordDocument (`lvegit-record`); their
schemas ship in lvegit/schemas/. The Action's results file holds a LiveRecord for each instance it re-ran.
Built from InstanceResult and Attempt, in one place."""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import Field

from lvegit.base.records import Record, write_schemas
from lvegit.run.attempt import ENVIRONMENT_FIELDS, Attempt
from lvegit.run.rerun import InstanceResult

SCHEMA: Final = "lvegit-run"
VERSION: Final = 1


class LiveRecord(Record):
    # One instance's live re-runs: its verdicts, how often it was unsafe, whether it agrees.
    file: str | None
    line: int | None
    recorded: bool | None
    verdicts: list[bool]
    unsafe: int
    runs: int
    interval_95: list[float]
    agree: bool | None
    errors: list[str]
    invalid: int = 0  # the verdicts that are invalid (the output could not be judged): not in `runs`


class InstanceRecord(LiveRecord):
    lve: str
    unsafe_rate: float | None
    # where there are any (and `invalid` likewise): an environment LVE's utility checks (the user's task
    # done), an attempt each
    utility: list[bool] | None = None


class InvalidLVE(Record):
    lve: str
    reason: str


class UnroutableModel(Record):
    model: str
    lves: list[str]
    reason: str


class BatchState(Record):
    """What a batch run leaves: attempts waiting for the next round, its output's bad lines, answers of
    no attempt of this run, and what to do next."""

    waiting: int
    problems: list[str]
    unmatched: int
    next: str


class RunSummary(Record):
    """Each instance counts once (see rerun.tally); `waiting` only for a batch run."""

    instances: int
    attempts: int
    agree: int
    disagree: int
    error: int
    skipped: int
    failed_attempts: int
    invalid_lves: int
    waiting: int | None = None


class RunDocument(Record):
    """What `lvegit run --format json` and `lvegit report --format json` print."""

    schema_name: Literal["lvegit-run"] = Field(alias="schema")
    version: Literal[1]
    instances: list[InstanceRecord]
    batch: BatchState | None = None  # only for a batch run
    invalid: list[InvalidLVE]
    unroutable: list[UnroutableModel]
    summary: RunSummary


class RecordDocument(Record):
    """What `lvegit record --format json` prints: the attempt that recorded one instance."""

    schema_name: Literal["lvegit-record"] = Field(alias="schema")
    version: Literal[1]
    attempt: Attempt


DOCUMENTS: Final[dict[str, type[Record]]] = {"run": RunDocument, "record": RecordDocument}


def record_document(attempt: Attempt) -> dict[str, Any]:
    document = RecordDocument(schema="lvegit-record", version=VERSION, attempt=attempt)
    left_out = {"attempt": set(ENVIRONMENT_FIELDS)} if attempt.environment is None else None
    return document.model_dump(mode="json", by_alias=True, exclude=left_out)


def live_record(result: InstanceResult) -> LiveRecord:
    return LiveRecord(**_live_fields(result), invalid=result.invalid)


def instance_row(result: InstanceResult) -> dict[str, Any]:
    """An InstanceRecord as JSON, written without building the record: a run prints 100,000s of them (the
    shipped schema checks their shape in the tests)."""
    runs = len(result.verdicts)
    return {
        **_live_fields(result),
        "lve": result.lve,
        "unsafe_rate": result.unsafe / runs if runs else None,
        **({"invalid": result.invalid} if result.invalid else {}),
        **({"utility": list(result.utility)} if result.utility else {}),
    }


def _live_fields(result: InstanceResult) -> dict[str, Any]:
    return {
        "file": result.file,
        "line": result.line,
        "recorded": result.recorded,
        "verdicts": list(result.verdicts),
        "unsafe": result.unsafe,
        "runs": len(result.verdicts),
        "interval_95": list(result.interval_95),
        "agree": result.agree,
        "errors": list(result.errors),
    }


if __name__ == "__main__":  # python -m lvegit.run.records: rewrite their shipped schemas
    write_schemas(DOCUMENTS, VERSION)
