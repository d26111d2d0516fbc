"""The typed, versioned records of `lvegit status --format json` (schema `lvegit-status`, version 1,
shipped in lvegit/schemas/: the status of each LVE on each model, and the rule that made it) and of
`lvegit history list --format json` (`lvegit-history`: the runs)."""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import Field

from lvegit.base.records import Record, write_schemas
from lvegit.history.status import FIXED_BELOW, LVEStatus, clean_attempts_needed, state_counts

VERSION: Final = 1


class Rule(Record):
    """When an LVE counts as fixed: the upper 95% bound of its unsafe rate under `fixed_below`, which
    with none unsafe takes `clean_attempts` attempts."""

    fixed_below: float
    clean_attempts: int


class HistoryInfo(Record):
    folder: str
    files: int


class StatusDocument(Record):
    """What `lvegit status --format json` prints: an entry per LVE and model, the LVE's folder order."""

    schema_name: Literal["lvegit-status"] = Field(alias="schema")
    version: Literal[1]
    history: HistoryInfo
    rule: Rule
    models: list[str]
    statuses: list[LVEStatus]
    counts: dict[str, int]


class RunRow(Record):
    """One run of the history: its file, when it started, its attempts and the model versions that
    answered."""

    file: str
    at: str
    attempts: int
    versions: list[str]


class HistoryDocument(Record):
    """What `lvegit history list --format json` prints: the runs, oldest first (none in a new history)."""

    schema_name: Literal["lvegit-history"] = Field(alias="schema")
    version: Literal[1]
    history: HistoryInfo
    runs: list[RunRow]


DOCUMENTS: Final[dict[str, type[Record]]] = {"status": StatusDocument, "history": HistoryDocument}


def history_document(folder: str, runs: list[RunRow]) -> dict[str, Any]:
    document = HistoryDocument(
        schema="lvegit-history",
        version=VERSION,
        history=HistoryInfo(folder=folder, files=len(runs)),
        runs=runs,
    )
    return document.model_dump(mode="json", by_alias=True)


def status_document(folder: str, files: int, models: list[str], statuses: list[LVEStatus]) -> dict[str, Any]:
    """The document as JSON-ready data, built directly: validating 200,000 entries would take seconds,
    and tests check the output against the shipped schema instead."""
    return {
        "schema": "lvegit-status",
        "version": VERSION,
        "history": {"folder": folder, "files": files},
        "rule": {"fixed_below": FIXED_BELOW, "clean_attempts": clean_attempts_needed()},
        "models": models,
        "statuses": [status.as_json() for status in statuses],
        "counts": state_counts(statuses),
    }


if __name__ == "__main__":  # python -m lvegit.history.records: rewrite its shipped schema
    write_schemas(DOCUMENTS, VERSION)
