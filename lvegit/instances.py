"""Recorded instances: one JSON object per line in instances/*.jsonl (or *.json holding JSONL)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lvegit.escape import mask
from lvegit.files import (
    MAX_INSTANCE_FILE_BYTES,
    MAX_INSTANCE_LINE_BYTES,
    FileProblem,
    decode,
    ensure_inside,
    parse_json,
)
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
    def passed(self) -> bool:
        """The recorded verdict (is_safe); lve-tools reads a missing one as true."""
        return self.data.get("passed", True) is True


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    with path.open("rb") as handle:
        yield from enumerate(handle, start=1)


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
    for number, raw in _lines(path):
        try:
            if len(raw) > MAX_INSTANCE_LINE_BYTES:
                raise FileProblem(
                    f"line is too long ({len(raw)} bytes, limit {MAX_INSTANCE_LINE_BYTES})", number
                )
            text = decode(raw, line=number)
            if not text.strip():
                continue
            data = parse_json(text, first_line=number)
        except FileProblem as exc:
            problems.error("", exc.message, exc.line, file=shown)
            continue
        if not isinstance(data, dict):
            problems.error(
                "", f"an instance must be a JSON object, not {json_type(data)}", number, file=shown
            )
            continue
        if _check_fields(data, shown, number, problems):
            instances.append(Instance(shown, number, data))
    return instances


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
    keys: set[str] = set()
    if not path.exists():
        return keys
    for number, raw in _lines(path):
        try:
            data = json.loads(raw)
        except ValueError:
            continue
        key = Instance(str(path), number, data).idempotency_key if isinstance(data, dict) else None
        if key is not None:
            keys.add(key)
    return keys


def append_instance(path: Path, record: dict[str, Any]) -> None:
    """Append one instance as one whole line, flushed to disk; existing lines are never rewritten.

    A single write in append mode cannot interleave with another writer's line, and a file whose last line
    lacks its newline gets one first, so the new line never fuses with it.
    """
    data = (mask(json.dumps(record, ensure_ascii=False)) + "\n").encode("utf-8")  # no secret is ever stored
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
