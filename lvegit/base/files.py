"""Reading files that a pull request controls: size limits, UTF-8, JSON with depth limits, containment."""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import os
import re
import stat
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lvegit.base.errors import LVEError

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


def read_text(path: Path, max_bytes: int, *, within: Path, base_name: str = "the LVE directory") -> str:
    """The text of a file that must lie inside `within` (see open_inside); non-UTF-8, binary and
    oversized files are clear FileProblems."""
    return decode(read_bytes(path, max_bytes, within=within, base_name=base_name))


def read_bytes(path: Path, max_bytes: int, *, within: Path, base_name: str = "the LVE directory") -> bytes:
    descriptor, info = _open_inside(within, path, os.O_RDONLY, base_name)
    try:
        if info.st_size > max_bytes:
            raise FileProblem(f"file is too large ({info.st_size} bytes, limit {max_bytes})")
        chunks, size = [], 0
        while size <= max_bytes and (chunk := os.read(descriptor, max_bytes + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(descriptor)


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


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


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
    except ValueError:  # Python's limit on the digits of an integer (4,300): json.loads says no more
        limit = sys.get_int_max_str_digits()
        digits = re.search(f"[0-9]{{{limit + 1},}}", text)
        line = first_line + (text.count("\n", 0, digits.start()) if digits else 0)
        raise FileProblem(f"a number with more than {limit} digits", line=line) from None
    # A value is nested at most one level deeper than it has brackets: most lines need no walk.
    brackets = text.count("[") + text.count("{")
    if brackets >= MAX_JSON_DEPTH and _depth(value, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        raise FileProblem(f"JSON nested deeper than {MAX_JSON_DEPTH} levels", line=first_line)
    # JSON may escape half of a UTF-16 pair alone (\ud800): no text holds one, and every encoder after
    # this one would refuse it. Only text that escapes a surrogate at all needs the check.
    if _SURROGATE_ESCAPE.search(text):
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            found = exc.object[exc.start : exc.start + 1].encode("utf-16-be", "surrogatepass").hex()
            raise FileProblem(
                f"a string holds a lone surrogate (\\u{found}): half of a UTF-16 pair is no text",
                line=first_line,
            ) from None
    return value


# What a JSONL reader skips at the start of a line, once: an RFC 7464 record separator, a byte order mark.
SKIPPED_LINE_STARTS = ("\x1e", "\ufeff")


def json_lines(lines: Iterable[str | bytes]) -> Iterator[tuple[int, Any]]:
    """(line number, value) for each non-blank line of a JSONL source, each line parsed on its own under
    the limits of whole files; a line that cannot be used gives a FileProblem naming that line as its
    value, and reading goes on with the next line."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = _json_line(line, number)
        except FileProblem as exc:
            value = FileProblem(exc.message, number)
        yield number, value


def _json_line(line: str | bytes, number: int) -> Any:
    """One line's value; a FileProblem where it is no UTF-8, too long, binary or no JSON."""
    if isinstance(line, bytes):
        try:
            line = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FileProblem(f"not valid UTF-8 (byte {exc.start})") from None
    if line.startswith(SKIPPED_LINE_STARTS):
        line = line[1:]
    if len(line) > MAX_INSTANCE_LINE_BYTES // 4 and len(data := line.encode()) > MAX_INSTANCE_LINE_BYTES:
        raise FileProblem(f"line is too long ({len(data)} bytes, limit {MAX_INSTANCE_LINE_BYTES})")
    if "\x00" in line:
        raise FileProblem("binary content (NUL byte) where text was expected")
    return parse_json(line.rstrip("\r\n"), first_line=number)


# --- Paths a pull request controls -------------------------------------------------------------------
# Every reader and writer of such a path opens it through open_inside: a link may point anywhere inside
# its base (the LVE, the repository, the cache or site folder), never out of it, and what is opened is a
# regular file, never a device, a pipe or a folder. Each refusal is a FileProblem naming the path.


def _shown(base: Path, path: Path) -> str:
    return path.relative_to(base).as_posix() if path.is_relative_to(base) else str(path)


def ensure_inside(base: Path, path: Path, base_name: str = "the LVE directory") -> Path:
    """`path` resolved; a FileProblem when it (through a link, say) leaves `base`, or cannot be resolved
    (a NUL byte, a name too long, a link loop in a folder on the way)."""
    try:
        # os.path: pathlib's resolve and parents cost more than the lookups
        root, target = _real_base(str(base)), os.path.realpath(path)
    except (OSError, ValueError) as exc:
        raise FileProblem(f"'{_shown(base, path)}' cannot be used: {_reason(exc)}") from None
    if target != root and not target.startswith(root.rstrip(os.sep) + os.sep):
        raise FileProblem(f"'{_shown(base, path)}' points outside {base_name}")
    return Path(target)


@functools.lru_cache(maxsize=1024)
def _real_base(base: str) -> str:
    """A base folder resolved, once per process: the LVE's files are opened one after another."""
    return os.path.realpath(base)


def path_inside(base: Path, relative: str, base_name: str = "the LVE directory") -> Path:
    """`base / relative` as given (for messages that name it), refusing absolute paths and anything
    (links included) that leaves `base`."""
    if not relative or Path(relative).is_absolute():
        raise FileProblem(f"'{relative}' must be a path relative to {base_name}")
    ensure_inside(base, base / relative, base_name)
    return base / relative


def _reason(exc: OSError | ValueError, path: Path | None = None) -> str:
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT) and path is not None:
        return f"no space left on the disk that holds {_mount_point(path)}"
    if isinstance(exc, ValueError):
        return "the name holds a NUL byte" if "null" in str(exc) else str(exc)
    if exc.errno == errno.ELOOP:
        return "a link that points to itself (a loop of links)"
    if exc.errno == errno.ENAMETOOLONG:
        return "the name is too long"
    return exc.strerror or str(exc)


def _mount_point(path: Path) -> str:
    folder = os.path.realpath(path.parent)
    while not os.path.ismount(folder):
        folder = os.path.dirname(folder)
    return folder


def open_inside(
    base: Path, path: Path, flags: int, base_name: str = "the LVE directory", mode: int = 0o644
) -> int:
    """A descriptor of the regular file at `path`, which must lie inside `base`: links are followed
    only while they stay inside, and the last one not at all for writing (flags other than O_RDONLY).
    Creating (O_CREAT) makes the missing folders on the way, inside `base` too."""
    return _open_inside(base, path, flags, base_name, mode)[0]


def _open_inside(
    base: Path, path: Path, flags: int, base_name: str = "the LVE directory", mode: int = 0o644
) -> tuple[int, os.stat_result]:
    """open_inside's descriptor, and what fstat said of it."""
    target = ensure_inside(base, path, base_name)
    writing = flags & (os.O_WRONLY | os.O_RDWR)
    try:
        if writing and flags & os.O_CREAT:
            ensure_inside(base, target.parent, base_name).mkdir(parents=True, exist_ok=True)
        # O_NOFOLLOW: realpath leaves a link loop as it is; for writing, a link is never written through
        # (os.path.realpath above already led to its target, so only a loop or a race is left here).
        # O_NONBLOCK: opening a pipe must not wait for a writer that never comes.
        descriptor = os.open(
            target if not writing else path,
            flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
            mode,
        )
    except (OSError, ValueError) as exc:
        shown = _shown(base, path)
        if isinstance(exc, FileNotFoundError) and os.path.islink(path):
            raise FileProblem(f"'{shown}' is a link to a file that does not exist") from None
        if isinstance(exc, FileNotFoundError):
            raise FileProblem(f"'{shown}' does not exist") from None
        if isinstance(exc, OSError) and exc.errno == errno.ELOOP and writing:
            raise FileProblem(f"'{shown}' is a link: lvegit does not write through links") from None
        raise FileProblem(f"'{shown}' cannot be opened: {_reason(exc, path)}") from None
    info = os.fstat(descriptor)
    if not stat.S_ISREG(info.st_mode):  # (O_NONBLOCK means nothing to a regular file: it stays)
        os.close(descriptor)
        raise FileProblem(f"'{_shown(base, path)}' is not a regular file (a folder, device or pipe)")
    return descriptor, info


def write_inside(base: Path, path: Path, data: bytes, base_name: str = "the LVE directory") -> None:
    """Replace the contents of the file at `path` inside `base` (created with its folders when missing);
    never through a link, never outside `base`. Written beside it first (into the space reserve_inside set
    aside, where it did), then renamed over it: a full disk leaves it as it was, and a FileProblem says so."""
    if os.path.lexists(path):  # what it is now: a link, a folder or a file outside `base` is refused
        os.close(open_inside(base, path, os.O_WRONLY, base_name))
    part = _part(path)
    descriptor = open_inside(base, part, os.O_WRONLY | os.O_CREAT, base_name)  # its reserved space kept
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.truncate()
        os.replace(part, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(part)
        raise unwritable(_shown(base, path), path, exc) from None


def unwritable(shown: str, path: Path, exc: OSError) -> FileProblem:
    """Why `path` (`shown` in the message) could not be written: a full disk is named."""
    return FileProblem(f"'{shown}' cannot be written: {_reason(exc, path)}")


def reserve_inside(base: Path, path: Path, size: int, base_name: str = "the LVE directory") -> None:
    """Set aside `size` bytes of disk for a later write_inside of `path` (a file beside it, which that
    write fills and renames): written after contributed code filled the disk, it still finds its space.
    A FileProblem where the space is not there now."""
    descriptor = open_inside(base, _part(path), os.O_WRONLY | os.O_CREAT, base_name)
    try:
        os.posix_fallocate(descriptor, 0, size)
    except OSError as exc:
        raise unwritable(_shown(base, path), path, exc) from None
    finally:
        os.close(descriptor)


def discard_reserved(path: Path) -> None:
    """Give back what reserve_inside set aside for `path` and write_inside did not use."""
    with contextlib.suppress(OSError):
        os.unlink(_part(path))


def _part(path: Path) -> Path:
    return path.with_name(f".{path.name}.lvegit-part")


def output_folder(folder: Path, name: str) -> Path:
    """A folder lvegit writes its own files into (the results folder, a site), made when missing; a
    FileProblem when it is a link, which a pull request could have committed in its place."""
    if folder.is_symlink():
        raise FileProblem(f"{name} '{folder}' is a link: lvegit does not write through links")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FileProblem(f"{name} '{folder}' cannot be made: {_reason(exc)}") from None
    return folder


def walk(top: Path) -> Iterator[tuple[Path, list[str], list[str]]]:
    """os.walk without recursion (a pull request can hold folders nested thousands deep, which Python
    3.11's recursive os.walk cannot go through) and without following links to folders: (folder, its
    folders, its other entries, links to folders among them), top-down; a caller may prune the folders
    list in place. Folders that cannot be listed (a path too long, say) are passed over."""
    stack = [top]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        folders: list[str] = []
        others: list[str] = []
        for entry in entries:
            try:
                is_folder = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_folder = False
            (folders if is_folder else others).append(entry.name)
        folders.sort()
        yield folder, folders, sorted(others)
        stack.extend(folder / name for name in reversed(folders))
