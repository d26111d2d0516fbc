"""Recorded instances: one JSON object per line in instances/*.jsonl (or *.json holding JSONL)."""

from __future__ import annotations

import errno
import functools
import io
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lvegit.base.escape import mask
from lvegit.base.files import (
    MAX_INSTANCE_FILE_BYTES,
    MAX_INSTANCE_LINE_BYTES,
    FileProblem,
    json_lines,
    open_inside,
    unwritable,
)
from lvegit.lve.problems import Problems, json_type


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
    def passed(self) -> bool | None:
        """The recorded verdict (is_safe); None: invalid (the output could not be judged, `"passed":
        null`). lve-tools reads a missing one as true."""
        passed = self.data.get("passed", True)
        return None if passed is None else passed is True


def _records(descriptor: int, start: int = 0) -> Iterator[tuple[int, Any]]:
    """(line number, value or FileProblem) of each non-blank line from byte `start` on, each parsed on
    its own; the descriptor stays open."""
    with os.fdopen(descriptor, "rb", closefd=False) as handle:
        handle.seek(start)
        yield from json_lines(handle)


def lve_of(path: Path) -> Path:
    """The LVE folder of an instance file (instances/NAME): the base its links must stay inside."""
    return path.parent.parent


def count_lines(path: Path) -> int:
    """Non-blank lines of an instance file, without parsing them; none for a file that cannot be read or
    is over MAX_INSTANCE_FILE_BYTES (validation says why): a line is read whole, and a file of no line
    break would be read into memory as one."""
    try:
        descriptor = open_inside(lve_of(path), path, os.O_RDONLY)
    except FileProblem:
        return 0
    with os.fdopen(descriptor, "rb") as handle:
        if os.fstat(descriptor).st_size > MAX_INSTANCE_FILE_BYTES:
            return 0
        return sum(1 for line in handle if line.strip())


def read_instances(path: Path, shown: str, problems: Problems) -> list[Instance]:
    """Every well-formed line of an instance file; each bad line is a problem naming its line.
    A file that is a link out of its LVE, or no regular file, is refused."""
    try:
        descriptor = open_inside(lve_of(path), path, os.O_RDONLY)
    except FileProblem as exc:
        problems.error("", exc.message, file=shown)
        return []
    try:
        size = os.fstat(descriptor).st_size
        if size > MAX_INSTANCE_FILE_BYTES:
            message = f"file is too large ({size} bytes, limit {MAX_INSTANCE_FILE_BYTES})"
            problems.error("", message, file=shown)
            return []
        records = list(_records(descriptor))
    finally:
        os.close(descriptor)
    instances = []
    for number, data in records:
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
    from lvegit.lve.schema import InstanceLine, validated  # slow to import: where it validates

    found = Problems(shown)
    valid = validated(InstanceLine, data, "", found, line) is not None
    if "passed" not in data:
        old = "; this line has the old key `is_safe`" if "is_safe" in data else ""
        found.warning("passed", f"missing; read as true (safe), as lve-tools does{old}", line)
    problems.items.extend(found.items)
    return valid


@dataclass
class InstanceKeys:
    """The idempotency keys each instance file holds, as one process last saw them: a file is read whole
    once, and after that only what was appended since (instance files only grow)."""

    _seen: dict[Path, tuple[set[str], int]] = field(default_factory=dict)  # keys, and bytes read

    def held(self, path: Path, descriptor: int) -> set[str]:
        """The keys in the open file, brought up to date; the caller holds its append lock."""
        keys, offset = self._seen.get(path, (set(), 0))
        size = os.fstat(descriptor).st_size
        if size < offset:  # rewritten by hand: read it whole again
            keys, offset = set(), 0
        if size > offset:
            found = (Instance("", n, data) for n, data in _records(descriptor, offset))
            keys.update(i.idempotency_key for i in found if isinstance(i.data, dict) and i.idempotency_key)
        self._seen[path] = (keys, size)
        return keys

    def grown(self, path: Path, descriptor: int) -> None:
        """This process appended to the file: what it wrote is known already."""
        keys, _offset = self._seen[path]
        self._seen[path] = (keys, os.fstat(descriptor).st_size)


def line_too_long(record: dict[str, Any]) -> str | None:
    """Why an instance cannot be stored: a line no reader would take back (a judge that answered 5 MB)."""
    size = len(json.dumps(record, ensure_ascii=False).encode("utf-8", "replace"))
    if size <= MAX_INSTANCE_LINE_BYTES:
        return None
    return (
        f"the instance would be a line of {size:,} bytes, over the {MAX_INSTANCE_LINE_BYTES:,} that every "
        "reader takes: not recorded"
    )


def append_instances(
    path: Path, records: list[dict[str, Any]], keys: InstanceKeys | None = None
) -> list[dict[str, Any]]:
    """Append the records whose idempotency key the file does not hold yet, a whole line each, in one
    write flushed to disk; existing lines are never rewritten. Returns the records appended.

    Any number of processes may append to one file at once: each holds an exclusive lock on it from
    reading its keys to the fsync (the kernel releases it when a process dies), so a key is appended
    once. A file whose last line lacks its newline gets one first, so a new line never fuses with it.
    The file must lie inside its LVE, and is never written through a link (a FileProblem says so).
    """
    import fcntl

    import jsonlines  # slow to import (attrs): only commands that write instances pay for it

    keys = keys if keys is not None else InstanceKeys()
    for record in records:
        if (too_long := line_too_long(record)) is not None:
            raise FileProblem(too_long)
    descriptor = open_inside(lve_of(path), path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        held = keys.held(path, descriptor)
        new = []
        for record in records:
            key = Instance("", 0, record).idempotency_key
            if key is None or key not in held:
                new.append(record)
            if key is not None:
                held.add(key)
        if not new:
            return []
        text = io.StringIO()
        with jsonlines.Writer(text, dumps=functools.partial(json.dumps, ensure_ascii=False)) as writer:
            writer.write_all(new)
        data = mask(text.getvalue()).encode("utf-8")  # no secret is ever stored
        size = os.fstat(descriptor).st_size
        if size and os.pread(descriptor, 1, size - 1) != b"\n":
            data = b"\n" + data
        try:
            if os.write(descriptor, data) != len(data):
                raise OSError(errno.ENOSPC, "short write")  # a full disk: the kernel wrote what fit
            os.fsync(descriptor)
        except OSError as exc:
            os.ftruncate(descriptor, size)  # never half a line
            raise unwritable(str(path), path, exc) from None
        keys.grown(path, descriptor)
        return new
    finally:
        os.close(descriptor)  # releases the lock
