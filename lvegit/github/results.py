"""The results file: what check mode found, versioned, and read back by comment mode as hostile data.

Comment mode runs with a write token and must not trust the file a pull request's job produced: it is
size-limited, parsed, checked field by field against the records below (their JSON Schema, generated from
them, ships as lvegit/schemas/lvegit-results-v4.json), and every string in it is escaped when rendered.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from pydantic import Field, ValidationError

from lvegit import __version__
from lvegit.base.errors import UsageError
from lvegit.base.escape import mask
from lvegit.base.files import (
    FileProblem,
    discard_reserved,
    output_folder,
    parse_json,
    reserve_inside,
    write_inside,
)
from lvegit.base.output import count
from lvegit.base.records import Record, write_schemas
from lvegit.history.status import LVEStatus
from lvegit.judge.records import ReplayCounts
from lvegit.judge.results import Appended, LVEChange, LVECheck, ReplayResult, summarize
from lvegit.lve.problems import Problem
from lvegit.run.records import LiveRecord, live_record
from lvegit.run.rerun import tally

if TYPE_CHECKING:  # only for annotations: comment mode does not import the runner
    from lvegit.run.rerun import InstanceResult

SCHEMA: Final = "lvegit-results"
# 2: each LVE's change (what the pull request did to it); 3: its run history; 4: where the check's
# routing and history came from, and what the pull request changed there (trust)
VERSION: Final = 4
MAX_RESULTS_BYTES = 32 * 1024 * 1024
# Set aside for results.json before contributed code runs: a few thousand LVEs' records (a larger file
# needs more space when it is written).
RESERVED_RESULTS_BYTES = 4 * 1024 * 1024
FAIL_ON = ("invalid", "mismatch", "error", "live-disagree", "live-error")


class LVERecord(Record):
    path: str
    id: str | None = None  # its stable id (lve-ids.json of the base commit in a pull request)
    valid: bool
    errors: list[Problem]
    warnings: list[Problem]
    replay: ReplayCounts
    replayed: list[ReplayResult]
    live: list[LiveRecord]
    appended: list[Appended]
    change: LVEChange | None  # None: no base to compare with (a push or a manual run checks everything)
    readme: str | None  # why its README.md needs `lvegit readme` (a warning, never a failure); None: current
    history: list[LVEStatus]  # its status on each model of the run history (lvegit status)
    severity: str | None = None  # its severity from the history's evidence, in words (history/severity.py)


class LiveSetting(Record):
    enabled: bool
    reason: str


class Totals(Record):
    changed: int
    removed: int
    invalid: int
    reproduced: int
    mismatch: int
    skipped: int
    error: int
    live_agree: int
    live_disagree: int
    live_error: int
    appended: int


class ResultsDocument(Record):
    """The results file of check mode, read back by comment mode."""

    schema_name: Literal["lvegit-results"] = Field(alias="schema")
    version: Literal[4]
    lvegit: str
    repository: str
    event: str
    pull_request: int | None
    base_sha: str | None
    head_sha: str
    live: LiveSetting
    lves: list[LVERecord]
    removed: list[str]
    totals: Totals
    failures: list[str]
    passed: bool
    history: str | None  # why the run history could not be read (a hostile or broken file); None: it was
    trust: list[str]  # where a pull request's check read routing and history from; what it changed there


DOCUMENTS: Final[dict[str, type[Record]]] = {"results": ResultsDocument}


def lve_record(
    check: LVECheck,
    live: list[InstanceResult],
    appended: list[Appended],
    change: LVEChange | None = None,
    readme: str | None = None,
    history: list[LVEStatus] | None = None,
    lve_id: str | None = None,
    severity: str | None = None,
) -> LVERecord:
    """One LVE's entry: its check, its live re-runs and appended instances where there were any, what
    the pull request changed in it, and whether its README is out of date."""
    return LVERecord(
        path=check.path,
        id=lve_id,
        valid=check.validation.valid,
        errors=list(check.validation.errors),
        warnings=list(check.validation.warnings),
        replay=ReplayCounts(**summarize(check.replay)),
        replayed=list(check.replay),
        live=[live_record(r) for r in live],
        appended=list(appended),
        change=change,
        readme=readme,
        history=history or [],
        severity=severity,
    )


def failures(totals: Totals, fail_on: tuple[str, ...]) -> list[str]:
    """Why the check fails under the policy (empty: it passes)."""
    counts = {
        "invalid": (totals.invalid, "invalid LVE", "invalid LVEs"),
        "mismatch": (
            totals.mismatch,
            "recorded verdict that no longer reproduces",
            "recorded verdicts that no longer reproduce",
        ),
        "error": (
            totals.error,
            "instance that could not be replayed",
            "instances that could not be replayed",
        ),
        "live-disagree": (
            totals.live_disagree,
            "instance whose live verdict differs",
            "instances whose live verdict differs",
        ),
        "live-error": (totals.live_error, "live re-run that failed", "live re-runs that failed"),
    }
    return [count(*forms) for key, forms in counts.items() if key in fail_on and forms[0]]


def document(
    lves: list[LVERecord], removed: list[str], live: LiveSetting, fail_on: tuple[str, ...], **about: Any
) -> ResultsDocument:
    """The results document of these LVEs, with their totals and the failures under `fail_on`; `about`:
    repository, event, pull_request, base_sha and head_sha."""
    live_results = tally(item for lve in lves for item in lve.live)
    totals = Totals(
        changed=len(lves),
        removed=len(removed),
        invalid=sum(not lve.valid for lve in lves),
        reproduced=sum(lve.replay.reproduced for lve in lves),
        mismatch=sum(lve.replay.mismatch for lve in lves),
        skipped=sum(lve.replay.skipped for lve in lves),
        error=sum(lve.replay.error for lve in lves),
        live_agree=live_results.agree,
        live_disagree=live_results.disagree,
        live_error=live_results.error,
        appended=sum(len(lve.appended) for lve in lves),
    )
    found = failures(totals, fail_on)
    return ResultsDocument(
        schema=SCHEMA,
        version=VERSION,
        lvegit=__version__,
        live=live,
        lves=lves,
        removed=removed,
        totals=totals,
        failures=found,
        passed=not found,
        **about,
    )


def validate(data: Any) -> ResultsDocument:
    """The document a results file holds; a UsageError naming the first place where it is not one."""
    if not isinstance(data, dict):
        raise UsageError("results file: the top level must be an object")
    if (data.get("schema"), data.get("version")) != (SCHEMA, VERSION):
        raise UsageError(f"results file: not a {SCHEMA} file of version {VERSION}")
    try:
        # JSON mode: strict as written (no coercion), and the dataclass records take objects
        return ResultsDocument.model_validate_json(json.dumps(data))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in first["loc"])
        raise UsageError(f"results file: {where.lstrip('.') or 'top level'}: {first['msg']}") from None


def load(path: Path) -> ResultsDocument:
    try:
        size = path.stat().st_size
        if size > MAX_RESULTS_BYTES:
            raise UsageError(f"results file {path} is too large ({size} bytes)")
        data = parse_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, FileProblem) as exc:  # FileProblem: nested too deep, a huge number
        raise UsageError(f"cannot read the results file {path}: {exc}") from None
    return validate(data)


def write(path: Path, results: ResultsDocument) -> None:
    write_in_folder(path, mask(results.model_dump_json(by_alias=True, indent=2)) + "\n")


def write_in_folder(path: Path, text: str) -> None:
    """Write a file of the results folder (results.json, instances.patch). The folder may lie in the
    checkout of a pull request, which could have committed a link in its place or in a file's: neither
    is written through."""
    try:
        folder = output_folder(path.parent, "the results folder")
        write_inside(folder, path, text.encode(), "the results folder")
    except FileProblem as exc:
        raise UsageError(f"cannot write {path.name}: {exc}") from None


def reserve(path: Path) -> None:
    """Set aside the space the results file may take, before any contributed code runs: a checker that
    fills the disk cannot keep it from being written (discard gives back what it did not use)."""
    try:
        folder = output_folder(path.parent, "the results folder")
        reserve_inside(folder, path, RESERVED_RESULTS_BYTES, "the results folder")
    except FileProblem as exc:
        raise UsageError(f"cannot write {path.name}: {exc}") from None


def discard(path: Path) -> None:
    discard_reserved(path)


def parse_fail_on(text: str) -> tuple[str, ...]:
    names = tuple(part.strip() for part in text.split(",") if part.strip())
    if names == ("none",):
        return ()
    unknown = [name for name in names if name not in FAIL_ON]
    if unknown:
        raise UsageError(f"input 'fail-on': unknown {unknown[0]!r}; use none or some of {', '.join(FAIL_ON)}")
    return names


if __name__ == "__main__":  # python -m lvegit.github.results: rewrite its shipped schema
    write_schemas(DOCUMENTS, VERSION)
