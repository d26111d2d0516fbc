"""The typed, versioned record of `lvegit status --format json` (schema `lvegit-status`, version 1,
shipped in lvegit/schemas/): the status of each LVE on each model, and the rule that made it."""

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


DOCUMENTS: Final[dict[str, type[Record]]] = {"status": StatusDocument}


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
