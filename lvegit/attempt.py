"""One execution of an LVE instance (in the spirit of garak's Attempt), and the JSONL report of a run.

An attempt records what was sent and received (responses already postprocessed: nothing unredacted is
ever written), the verdict, its status (new, started, complete, error), timings and retries. The report
gets a line when an attempt starts and one when it ends; a run resumed from its report skips the attempts
whose last line says complete.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from lvegit.errors import UsageError
from lvegit.escape import mask

Status = Literal["new", "started", "complete", "error"]


def attempt_id(*identity: Any) -> str:
    """A stable id for the same work (LVE, source instance, args, model, repetition): the idempotency key."""
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:32]


@dataclass
class Attempt:
    id: str
    lve: str
    model: str  # as requested (the LVE's model or --model)
    args: dict[str, Any]
    repetition: int = 0
    source_file: str | None = None
    source_line: int | None = None
    recorded: bool | None = None
    status: Status = "new"
    backend: str | None = None
    resolved_model: str | None = None
    conversation: list[list[dict[str, Any]]] = field(default_factory=list)
    response: Any = None
    verdict: bool | None = None
    error: str | None = None
    started_at: float | None = None
    finished_at: float | None = None
    requests: int = 0
    retries: int = 0
    appended_to: str | None = None
    appended_key: str | None = None  # the idempotency key of the instance line it appended

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Attempt:
        names = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in names})


class Report:
    """The JSONL file of a run's attempts."""

    def __init__(self, path: Path, resume: bool) -> None:
        if path.exists() and not resume:
            raise UsageError(
                f"{path} exists: pass --resume to continue that run, or choose another --report file"
            )
        self.path = path
        previous = load_report(path) if resume and path.exists() else {}
        self.done = {key: attempt for key, attempt in previous.items() if attempt.status == "complete"}

    def write(self, attempt: Attempt) -> None:
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(mask(json.dumps(attempt.as_json(), ensure_ascii=False)) + "\n")
            handle.flush()


def load_report(path: Path) -> dict[str, Attempt]:
    """Each attempt of a report in its latest state (a torn last line is ignored)."""
    latest: dict[str, Attempt] = {}
    with path.open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            try:
                attempt = Attempt.from_json(json.loads(line))
            except (ValueError, TypeError):
                continue
            latest[attempt.id] = attempt
    return latest
