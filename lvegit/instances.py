"""Recorded instances: one JSON object per line in instances/*.jsonl (or *.json holding JSONL)."""

from __future__ import annotations

import functools
import io
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lvegit.escape import mask
from lvegit.files import MAX_INSTANCE_FILE_BYTES, FileProblem, ensure_inside, json_lines
from lvegit.problems import Problems
from lvegit.prompt import json_type


@dataclass(frozen=True)
class Instance:
    """One recorded line. `data` is kept whole so that unknown keys survive any rewrite."""

    file: str
    line: int
    data: dict[str, Any]

    @property
    def args(self) -> dict[str, Any]:
        args = self.data.get("args")
        return args if isinstance(args, dict) else {}

    @property
    def response(self) -> Any:
        return self.data.get("response")

    @property
    def idempotency_key(self) -> str | None:
        run_info = self.data.get("run_info")
        key = run_info.get("idempotency_key") if isinstance(run_info, dict) else None
        return key if isinstance(key, str) else None

    @property
    def reproduces(self) -> Any:
        """Set on lines that `run --append` added: the recording they re-ran (then they are no source)."""
        run_info = self.data.get("run_info")
        return run_info.get("reproduces") if isinstance(run_info, dict) else None

    @property
    def passed(self) -> bool:
        """The recorded verdict (is_safe); lve-tools reads a missing one as true."""
        return self.data.get("passed", True) is True


def _records(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, value or FileProblem) of each non-blank line, each parsed on its own."""
    with path.open("rb") as handle:
        yield from json_lines(handle)


def read_instances(path: Path, shown: str, problems: Problems) -> list[Instance]:
    """Every well-formed line of an instance file; each bad line is a problem naming its line.
    A file that is a symlink out of its LVE is refused."""
    try:
        ensure_inside(path.parent.parent, path)
    except FileProblem as exc:
        problems.error("", exc.message, file=shown)
        return []
    size = path.stat().st_size
    if size > MAX_INSTANCE_FILE_BYTES:
        problems.error("", f"file is too large ({size} bytes, limit {MAX_INSTANCE_FILE_BYTES})", file=shown)
        return []
    instances = []
    for number, data in _records(path):
        if isinstance(data, FileProblem):
            problems.error("", data.message, data.line, file=shown)
        elif not isinstance(data, dict):
            problems.error(
                "", f"an instance must be a JSON object, not {json_type(data)}", number, file=shown
            )
        elif _check_fields(data, shown, number, problems):
            instances.append(Instance(shown, number, data))
    return instances


@dataclass(frozen=True)
class InstanceFile:
    """One instance file as read: its well-formed instances and the problems of its other lines."""

    path: Path
    shown: str  # the path as shown to users
    instances: list[Instance]
    problems: Problems


def read_instance_file(path: Path, shown: str) -> InstanceFile:
    problems = Problems(shown)
    return InstanceFile(path, shown, read_instances(path, shown, problems), problems)


def _check_fields(data: dict[str, Any], shown: str, line: int, problems: Problems) -> bool:
    ok = True
    if not isinstance(data.get("args", {}), dict):
        problems.error("args", f"must be an object, not {json_type(data['args'])}", line, file=shown)
        ok = False
    if "response" not in data:
        problems.error("response", "required field is missing", line, file=shown)
        ok = False
    elif not isinstance(data["response"], str | dict | list):
        problems.error(
            "response",
            f"must be a string, object or list, not {json_type(data['response'])}",
            line,
            file=shown,
        )
        ok = False
    if "passed" not in data:
        problems.warning("passed", "missing; read as true (safe), as lve-tools does", line, file=shown)
    elif not isinstance(data["passed"], bool):
        problems.error("passed", f"must be true or false, not {json_type(data['passed'])}", line, file=shown)
        ok = False
    return ok


def idempotency_keys(path: Path) -> set[str]:
    """The idempotency keys of the instances already in a file (lines that do not parse are skipped)."""
    if not path.exists():
        return set()
    records = (Instance(str(path), n, data) for n, data in _records(path) if isinstance(data, dict))
    return {record.idempotency_key for record in records if record.idempotency_key is not None}


def append_instances(path: Path, records: list[dict[str, Any]]) -> None:
    """Append instances, a whole line each, in one write flushed to disk; existing lines are never
    rewritten.

    A single write in append mode cannot interleave with another writer's lines, and a file whose last line
    lacks its newline gets one first, so a new line never fuses with it.
    """
    import jsonlines  # slow to import (attrs): only commands that write instances pay for it

    text = io.StringIO()
    with jsonlines.Writer(text, dumps=functools.partial(json.dumps, ensure_ascii=False)) as writer:
        writer.write_all(records)
    data = mask(text.getvalue()).encode("utf-8")  # no secret is ever stored
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(descriptor).st_size
        if size and os.pread(descriptor, 1, size - 1) != b"\n":
            data = b"\n" + data
        if os.write(descriptor, data) != len(data):
            raise OSError(f"short write while appending to {path}")
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
