"""Reading files that a pull request controls: size limits, UTF-8, JSON with depth limits, containment."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lvegit.errors import LVEError

MAX_TEST_JSON_BYTES = 1 * 1024 * 1024
MAX_PROMPT_BYTES = 1 * 1024 * 1024
MAX_INSTANCE_FILE_BYTES = 256 * 1024 * 1024
MAX_INSTANCE_LINE_BYTES = 4 * 1024 * 1024
MAX_JSON_DEPTH = 64


@dataclass(frozen=True)
class FileProblem(LVEError):
    """A file cannot be used; `line`/`column` locate the problem when known (1-based)."""

    message: str
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        return self.message


def read_text(path: Path, max_bytes: int) -> str:
    """The file's text; non-UTF-8, binary and oversized files are clear FileProblems."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise FileProblem(f"cannot read: {exc.strerror}") from None
    if size > max_bytes:
        raise FileProblem(f"file is too large ({size} bytes, limit {max_bytes})")
    data = path.read_bytes()
    return decode(data)


def decode(data: bytes, line: int | None = None) -> str:
    if b"\x00" in data:
        raise FileProblem("binary content (NUL byte) where text was expected", line=line)
    try:
        return data.decode("utf-8-sig" if line in (None, 1) else "utf-8")
    except UnicodeDecodeError as exc:
        raise FileProblem(f"not valid UTF-8 (byte {exc.start})", line=line) from None


def _depth(value: Any, limit: int) -> int:
    """Nesting depth of a parsed JSON value, stopping once past `limit`."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    deepest = 0
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
    return deepest


def parse_json(text: str, first_line: int = 1) -> Any:
    """Parse JSON; errors carry line and column (shifted by `first_line` for one line of a larger file)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FileProblem(
            f"invalid JSON: {exc.msg} (line {exc.lineno + first_line - 1}, column {exc.colno})",
            line=exc.lineno + first_line - 1,
            column=exc.colno,
        ) from None
    except RecursionError:
        raise FileProblem(f"JSON nested deeper than {MAX_JSON_DEPTH} levels", line=first_line) from None
    if _depth(value, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        raise FileProblem(f"JSON nested deeper than {MAX_JSON_DEPTH} levels", line=first_line)
    return value


class _BadLine(ValueError):
    """Carries a FileProblem through jsonlines, which reports a line whose loads raised ValueError."""

    def __init__(self, problem: FileProblem) -> None:
        super().__init__(problem.message)
        self.problem = problem


def json_lines(lines: Iterable[str | bytes]) -> Iterator[tuple[int, Any]]:
    """(line number, value) for each non-blank line of a JSONL source, each line parsed on its own by
    jsonlines under the limits of whole files; a line that cannot be used gives a FileProblem naming that
    line as its value, and reading goes on with the next line."""
    current = 0

    def numbered() -> Iterator[str | bytes]:
        nonlocal current
        for current, line in enumerate(lines, start=1):  # noqa: B007 - read by loads and below
            yield line

    def loads(text: str | bytes) -> Any:
        if isinstance(text, bytes):  # pragma: no cover - jsonlines decodes bytes before calling loads
            text = text.decode("utf-8")
        if len(text) > MAX_INSTANCE_LINE_BYTES // 4 and len(data := text.encode()) > MAX_INSTANCE_LINE_BYTES:
            problem = FileProblem(f"line is too long ({len(data)} bytes, limit {MAX_INSTANCE_LINE_BYTES})")
            raise _BadLine(problem)
        try:
            if "\x00" in text:
                raise FileProblem("binary content (NUL byte) where text was expected")
            return parse_json(text.rstrip("\r\n"), first_line=current)
        except FileProblem as exc:
            raise _BadLine(exc) from None

    import jsonlines  # slow to import (attrs): only commands that read JSONL pay for it

    reader = jsonlines.Reader(numbered(), loads=loads)
    while True:
        try:
            value = reader.read(skip_empty=True, allow_none=True)
        except EOFError:
            return
        except jsonlines.InvalidLineError as exc:
            cause = exc.__cause__
            if isinstance(cause, _BadLine):
                message = cause.problem.message
            elif isinstance(cause, UnicodeDecodeError):
                message = f"not valid UTF-8 (byte {cause.start})"
            else:  # pragma: no cover - jsonlines raises nothing else with allow_none and no type
                message = str(exc)
            yield exc.lineno, FileProblem(message, exc.lineno)
        else:
            yield current, value


def ensure_inside(base: Path, path: Path) -> Path:
    """`path` resolved; a FileProblem when it (through a symlink, say) leaves `base`."""
    root = os.path.realpath(base)  # os.path: pathlib's resolve and parents cost more than the lookups
    target = os.path.realpath(path)
    if target != root and not target.startswith(root.rstrip(os.sep) + os.sep):
        raise FileProblem(
            f"'{path.relative_to(base) if path.is_relative_to(base) else path}' points outside "
            "the LVE directory"
        )
    return Path(target)


def resolve_inside(base: Path, relative: str) -> Path:
    """`base / relative`, refusing absolute paths and anything (symlinks included) that leaves `base`."""
    if not relative or Path(relative).is_absolute():
        raise FileProblem(f"'{relative}' must be a path relative to the LVE directory")
    return ensure_inside(base, base / relative)
