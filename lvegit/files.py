"""Reading files that a pull request controls: size limits, UTF-8, JSON with depth limits, containment."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_TEST_JSON_BYTES = 1 * 1024 * 1024
MAX_PROMPT_BYTES = 1 * 1024 * 1024
MAX_INSTANCE_FILE_BYTES = 256 * 1024 * 1024
MAX_INSTANCE_LINE_BYTES = 4 * 1024 * 1024
MAX_JSON_DEPTH = 64


@dataclass(frozen=True)
class FileProblem(Exception):
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


def ensure_inside(base: Path, path: Path) -> Path:
    """`path` resolved; a FileProblem when it (through a symlink, say) leaves `base`."""
    root = base.resolve()
    target = path.resolve()
    if target != root and root not in target.parents:
        raise FileProblem(
            f"'{path.relative_to(base) if path.is_relative_to(base) else path}' points outside "
            "the LVE directory"
        )
    return target


def resolve_inside(base: Path, relative: str) -> Path:
    """`base / relative`, refusing absolute paths and anything (symlinks included) that leaves `base`."""
    if not relative or Path(relative).is_absolute():
        raise FileProblem(f"'{relative}' must be a path relative to the LVE directory")
    return ensure_inside(base, base / relative)
