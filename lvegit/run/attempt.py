"""One execution of an LVE instance (in the spirit of garak's Attempt), and the JSONL report of a run.

An attempt records what was sent and received (responses already postprocessed: nothing unredacted is
ever written), the verdict, its status (new, started, complete, error), timings and retries. The report
gets a line when an attempt starts and one when it ends; a run resumed from its report skips the attempts
whose last line says complete.
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
import types
import typing
import uuid
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from lvegit.base.errors import UsageError
from lvegit.base.escape import mask
from lvegit.lve.problems import RECORD_CONFIG

Status = Literal["new", "started", "complete", "error", "skipped"]  # skipped: replay could not judge it


def attempt_id(*identity: Any) -> str:
    """A stable id for the same work (LVE, source instance, args, model, repetition): the idempotency key."""
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:32]


@dataclass(slots=True)  # a large run holds one per attempt
class Attempt:
    __pydantic_config__ = RECORD_CONFIG  # `record --format json` prints it as a record (run/records.py)

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
    backend_details: dict[str, str] = field(default_factory=dict)  # a local model's device and dtype
    conversation: list[list[dict[str, Any]]] = field(default_factory=list)
    response: Any = None
    verdict: bool | None = None
    error: str | None = None
    # "model" when the model's service failed for good (a refused request, or retries given up): not a
    # finding about the LVE, so a run that only has such errors exits 4, not 1
    error_source: str | None = None
    started_at: float | None = None
    finished_at: float | None = None
    requests: int = 0
    retries: int = 0
    judgement: dict[str, Any] | None = None  # what an LLM judge said, stored with the instance
    # An environment LVE's: the state before and after (stored with the instance), its utility check's answer
    environment: dict[str, Any] | None = None
    utility: bool | None = None
    judge_requests: int = 0
    appended_to: str | None = None
    appended_key: str | None = None  # the idempotency key of the instance line it appended

    def as_json(self) -> dict[str, Any]:
        """Its fields as a JSON object (not a deep copy: what it holds is written out, not changed); an
        environment's fields only where the LVE has one."""
        left_out = () if self.environment is not None else ENVIRONMENT_FIELDS
        return {name: getattr(self, name) for name in FIELD_NAMES if name not in left_out}

    def forget_exchange(self) -> None:
        """Drop what was sent and received once it is written: a large batch run keeps only the outcome
        of each attempt (status, verdict, error) for its summary."""
        self.conversation, self.response = [], None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Attempt:
        """An attempt from a report line; a ValueError names the first field of the wrong type (a
        report is a file like any other: it may have been edited)."""
        hints = _field_hints()
        for key, value in data.items():
            if key in hints and not _fits(key, value):
                raise ValueError(f"'{key}' is not {_described(hints[key])}")
        missing = [name for name in ("id", "lve", "model", "args") if name not in data]
        if missing:
            raise ValueError(f"'{missing[0]}' is missing")
        return cls(**{key: value for key, value in data.items() if key in hints})


FIELD_NAMES = tuple(f.name for f in fields(Attempt))
ENVIRONMENT_FIELDS = ("environment", "utility")
RUN_KEY = "lvegit_run"  # the first line of a report: what the run was, for --resume and `report`
BATCH_KEY = "lvegit_batch"  # a line per batch a run created and per state it ended in (`run --batch`)


def differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """How two runs' settings differ, as `--repeat 5 there, 3 here`."""
    return [
        f"{key} {json.dumps(old.get(key))} there, {json.dumps(new.get(key))} here"
        for key in sorted(set(old) | set(new))
        if old.get(key) != new.get(key)
    ]


def started(path: Path) -> bool:
    """Whether a run wrote anything to the report at `path`: an empty file is a run killed before its
    header, which can be neither resumed nor told apart from no run at all."""
    return path.exists() and path.stat().st_size > 0


class Report:
    """The JSONL file of a run's attempts, after a header line with the run's settings and command."""

    def __init__(self, path: Path, resume: bool, settings: dict[str, Any], command: str) -> None:
        if started(path) and not resume:
            raise UsageError(
                f"{path} exists: pass --resume to continue that run, or choose another --report file"
            )
        self.path = path
        self.command = command
        previous = load_report(path) if resume and started(path) else None
        if previous is not None and previous.settings is not None:
            changed = differences(previous.settings, settings)
            if changed:
                raise UsageError(
                    f"--resume: {path} is the report of another run ({'; '.join(changed)}); resume it with "
                    f"the same selection and options, or choose another --report file"
                )
        attempts = previous.attempts if previous is not None else {}
        self.done = {key: attempt for key, attempt in attempts.items() if attempt.status == "complete"}
        self.resumed = previous is not None
        self.batches = previous.batches if previous is not None else {}
        self.run_id = previous.run_id if previous is not None else uuid.uuid4().hex
        self.started = previous.started if previous is not None else time.time()
        # A new report's header is written with its first attempt: a run that fails before any (no key,
        # no route) leaves no file behind, and the same command works again as written.
        self._header: dict[str, Any] | None = None
        if previous is None:
            self._header = {
                "settings": settings,
                "command": command,
                "id": self.run_id,
                "started": self.started,
            }

    def write(self, attempt: Attempt) -> None:
        self.write_all([attempt])

    def write_all(self, attempts: list[Attempt]) -> None:
        """A line per attempt, in one write."""
        self._append(*(attempt.as_json() for attempt in attempts))

    def write_batch(self, batch: dict[str, Any]) -> None:
        """A batch this run created (`key` names its round and part), or the state it ended in."""
        self.batches[batch["key"]] = batch
        self._append({BATCH_KEY: batch})

    def _append(self, *records: dict[str, Any]) -> None:
        if self._header is not None:
            records, self._header = ({RUN_KEY: self._header}, *records), None
        text = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(mask(text))
            handle.flush()


@dataclass
class LoadedReport:
    attempts: dict[str, Attempt]
    settings: dict[str, Any] | None = None
    command: str | None = None
    run_id: str | None = None  # what marks the batches this run created (reports of lvegit 0.1 have none)
    started: float | None = None
    batches: dict[str, dict[str, Any]] = field(default_factory=dict)  # each batch's latest line, by key

    @property
    def unfinished(self) -> list[Attempt]:
        """Attempts that started but never ended: the run was interrupted."""
        return [attempt for attempt in self.attempts.values() if attempt.status in ("new", "started")]


def load_report(path: Path) -> LoadedReport:
    """Each attempt of a report in its latest state (a torn last line is ignored); a file that holds no
    attempt and no run header is not a report (a usage error naming it)."""
    loaded = LoadedReport({})
    header = False
    with path.open(encoding="utf-8", errors="replace") as handle:
        for number, text in enumerate(handle, start=1):
            try:
                data = json.loads(text)
            except (ValueError, RecursionError):
                continue
            if isinstance(data, dict) and isinstance(data.get(RUN_KEY), dict):
                header = True
                settings, command = data[RUN_KEY].get("settings"), data[RUN_KEY].get("command")
                loaded.settings = settings if isinstance(settings, dict) else None
                loaded.command = command if isinstance(command, str) else None
                run_id, started = data[RUN_KEY].get("id"), data[RUN_KEY].get("started")
                loaded.run_id = run_id if isinstance(run_id, str) else None
                loaded.started = float(started) if isinstance(started, int | float) else None
                continue
            if _is_batch(data):
                loaded.batches[data[BATCH_KEY]["key"]] = data[BATCH_KEY]
                continue
            if not _is_attempt(data):
                continue
            try:
                attempt = Attempt.from_json(data)
            except ValueError as exc:
                raise UsageError(f"{path}:{number}: not an attempt as lvegit writes one: {exc}") from None
            loaded.attempts[attempt.id] = attempt
    if not header and not loaded.attempts:
        raise UsageError(f"{path}: not a run report (write one with lvegit run --report FILE)")
    return loaded


@functools.cache
def _field_hints() -> dict[str, Any]:
    return typing.get_type_hints(Attempt)


@functools.cache
def _accepted() -> dict[str, tuple[frozenset[type], frozenset[Any]] | None]:
    """For each field, the JSON types its hint accepts and the values a Literal allows (None: anything)."""

    def options(hint: Any) -> tuple[Any, ...]:
        if typing.get_origin(hint) in (typing.Union, types.UnionType):
            return typing.get_args(hint)
        return (hint,)

    accepted: dict[str, tuple[frozenset[type], frozenset[Any]] | None] = {}
    for name, hint in _field_hints().items():
        if hint is Any:
            accepted[name] = None
            continue
        kinds: set[type] = set()
        values: set[Any] = set()
        for option in options(hint):
            origin = typing.get_origin(option)
            if origin is typing.Literal:
                values.update(typing.get_args(option))
            else:
                kinds.update((int, float) if option is float else (origin or option,))
        accepted[name] = (frozenset(kinds), frozenset(values))
    return accepted


def _fits(name: str, value: Any) -> bool:
    """Whether a JSON value fits the field's type (exact JSON types: True is no whole number)."""
    accepted = _accepted()[name]
    if accepted is None:
        return True
    kinds, values = accepted
    return type(value) in kinds or (bool(values) and isinstance(value, str) and value in values)


def _described(hint: Any) -> str:
    names = {str: "text", int: "a whole number", float: "a number", bool: "true or false", dict: "an object"}
    options = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)

    def one(option: Any) -> str:
        if option is type(None):
            return "null"
        if typing.get_origin(option) is typing.Literal:
            return "one of " + ", ".join(map(str, typing.get_args(option)))
        return names.get(typing.get_origin(option) or option, "a list")

    return " or ".join(map(one, options))


def _is_batch(data: Any) -> bool:
    batch = data.get(BATCH_KEY) if isinstance(data, dict) else None
    return (
        isinstance(batch, dict)
        and all(isinstance(batch.get(name), str) for name in ("key", "id", "status"))
        and type(batch.get("round")) is int
    )


def _is_attempt(data: Any) -> bool:
    return (
        isinstance(data, dict)
        and isinstance(data.get("id"), str)
        and isinstance(data.get("lve"), str)
        and data.get("status") in ("new", "started", "complete", "error", "skipped")
    )
