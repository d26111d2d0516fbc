"""The history folder: one Parquet file per run, a row per finished attempt.

A row holds what the status of an LVE needs and no more (no prompts, no responses: those stay in the
run's report): the run and when it started, the LVE, the model as requested and the version that
answered, the instance and repetition, whether the attempt was unsafe (null when it ended in an error or
its verdict is invalid), and whether its verdict is invalid (the output could not be judged).
Files are written once, named `<start, UTC>-<run key>.parquet` where the run key is a hash of the attempts,
so that the same report is never added twice. A pull request may commit anything under the folder: only
plain files with such names are read, never links, and a file that is no history file is an error naming it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import re
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from lvegit.base.errors import MissingExtra, UsageError
from lvegit.base.extras import missing
from lvegit.base.files import FileProblem, output_folder, write_inside
from lvegit.run.attempt import Attempt, load_report

if TYPE_CHECKING:
    import duckdb
    import pyarrow

HISTORY_DIR: Final = "history"  # at the repository root, unless LVEGIT_HISTORY_DIR says otherwise
RUN_FILE: Final = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{6}Z)-([0-9a-f]{16})\.parquet$")
ROW_GROUP: Final = 16_384  # rows
# A weekly run of 1,000 LVEs x 5 instances x 3 repetitions x 20 models is 300,000 rows; a file of constant
# rows compresses to almost nothing, so its row count is checked before anything is read.
MAX_RUN_ROWS: Final = 5_000_000
MAX_HISTORY_ROWS: Final = 50_000_000
# What a run file holds once decompressed, by its metadata, and each string of it, in bytes: zstd shrinks a
# repeated string thousands of times over (a 110 KiB file of them took status to 4.3 GB), and one 20 MB
# version shared by 20,000 rows is 400 GB hashed. lvegit writes names, versions and paths of a few hundred
# bytes, and a run of MAX_RUN_ROWS in a few tens of MB.
MAX_RUN_UNCOMPRESSED_BYTES: Final = 256 * 1024 * 1024
MAX_HISTORY_UNCOMPRESSED_BYTES: Final = 4 * 1024 * 1024 * 1024
MAX_STRING_BYTES: Final = 1024
STRING_COLUMNS: Final = ("run", "lve", "model", "version", "file")
DUCKDB_MEMORY_LIMIT: Final = "4GiB"  # a status of 10 million rows takes under 1 GiB
# null unsafe: the attempt ended in an error or its verdict is invalid; null file and line: an attempt of no
# recorded instance (a prompt run anew); every other column is always set
NULLABLE: Final = ("file", "line", "unsafe")
# In each file's metadata: what a reader of another layout can refuse. Layout 2 adds the column `invalid`;
# a run with no invalid verdict is still written in layout 1 (without it), so that a history without
# environment LVEs stays byte for byte what earlier versions wrote, and they can read it. Both are read.
FORMAT_VERSION: Final = "2"
WITHOUT_INVALID: Final = "1"
COLUMNS: Final = (
    "run",
    "run_at",
    "lve",
    "model",
    "version",
    "file",
    "line",
    "repetition",
    "unsafe",
    "invalid",  # layout 2 only
)


def needs_data_extra(exc: ImportError) -> MissingExtra:
    package = (exc.name or "pyarrow").split(".")[0]  # pyarrow.parquet is pyarrow's
    return missing("the run history", "data", package)


def attempt_fields() -> list[tuple[str, pyarrow.DataType]]:
    """What identifies an attempt in a table: its LVE, the model asked and the version that answered, the
    instance and the repetition (the history's run files, a dataset's attempts table)."""
    import pyarrow as pa

    return [
        ("lve", pa.string()),
        ("model", pa.string()),
        ("version", pa.string()),
        ("file", pa.string()),
        ("line", pa.int32()),
        ("repetition", pa.int32()),
    ]


def arrow_schema(invalid: bool = True) -> pyarrow.Schema:
    """A run file's layout: FORMAT_VERSION's, or without `invalid` the first one's."""
    import pyarrow as pa

    return pa.schema(
        [
            ("run", pa.string()),
            ("run_at", pa.timestamp("ms", tz="UTC")),
            *attempt_fields(),
            ("unsafe", pa.bool_()),
            *([("invalid", pa.bool_())] if invalid else []),
        ],
        metadata={"lvegit_history": FORMAT_VERSION if invalid else WITHOUT_INVALID},
    )


@dataclass(frozen=True)
class HistoryFile:
    path: Path
    started: str  # as in the name: 2026-11-24T031700Z
    key: str
    counts_invalid: bool = False  # of layout 2: its invalid verdicts are told from errors (once checked)


def history_dir(root: Path, given: Path | None, configured: str | None) -> Path:
    """The history folder: --history as given, else LVEGIT_HISTORY_DIR (relative to the repository root),
    else `history/` at the root. The repository's own must stay inside it: a pull request may commit the
    folder as a link to a history of its making."""
    if given is not None:
        return given
    folder = root / (configured or HISTORY_DIR)
    if os.path.lexists(folder):
        real, inside = os.path.realpath(folder), os.path.realpath(root)
        if not real.startswith(inside.rstrip(os.sep) + os.sep):
            raise UsageError(
                f"{configured or HISTORY_DIR}: the history folder leads out of the repository, to {real}: "
                "a repository's run history is read only inside it (pass --history to read another)"
            )
    return folder


def history_files(folder: Path) -> list[HistoryFile]:
    """The run files of the history, oldest first; other entries (a README, a .gitattributes) are passed
    over, and a link with a run file's name is refused: it could lead out of the repository."""
    if not folder.is_dir():
        return []
    found = []
    for entry in sorted(os.scandir(folder), key=lambda entry: entry.name):
        match = RUN_FILE.match(entry.name)
        if match is None:
            continue
        if entry.is_symlink() or not entry.is_file(follow_symlinks=False):
            raise UsageError(f"{folder.name}/{entry.name}: not a plain file (lvegit reads no links)")
        found.append(HistoryFile(Path(entry.path), match.group(1), match.group(2)))
    return found


def run_key(attempts: Iterable[Attempt]) -> str:
    """The same finished attempts (their ids, repetitions and start times) give the same key."""
    digest = hashlib.sha256()
    for attempt in sorted(attempts, key=lambda a: (a.id, a.started_at or 0.0)):
        digest.update(f"{attempt.id}:{attempt.started_at}\n".encode())
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class AddedRun:
    path: Path
    attempts: int
    failed: int  # ended in an error
    invalid: int  # complete, with an invalid verdict
    models: list[str]
    versions: list[str]
    started: datetime


def add_run(folder: Path, reports: list[Path], started: datetime | None = None) -> AddedRun:
    """Store the finished attempts of one run (a report, or the reports of its shards) as one file."""
    attempts = [
        attempt
        for path in reports
        for attempt in load_report(path).attempts.values()
        if attempt.status in ("complete", "error")
    ]
    if not attempts:
        raise UsageError(f"{', '.join(map(str, reports))}: no finished attempt to add to the history")
    return write_run(folder, attempts, started or _started(attempts))


def write_run(folder: Path, attempts: list[Attempt], when: datetime) -> AddedRun:
    """Write these finished attempts as one run that started `when`; never over a run already there."""
    key = run_key(attempts)
    for existing in history_files(folder):
        if existing.key == key:
            raise UsageError(f"this run is in the history already: {existing.path}")
    run_id = f"{when:%Y-%m-%dT%H%M%SZ}-{key}"
    data = _parquet(_rows(attempts, run_id, when))
    try:
        output_folder(folder, "the history folder")
        write_inside(folder, folder / f"{run_id}.parquet", data, "the history folder")
    except FileProblem as exc:
        raise UsageError(f"cannot write the history: {exc}") from None
    return AddedRun(
        folder / f"{run_id}.parquet",
        len(attempts),
        sum(attempt.status == "error" for attempt in attempts),
        sum(_invalid(attempt) for attempt in attempts),
        sorted({attempt.model for attempt in attempts}),
        sorted({_version(attempt) for attempt in attempts}),
        when,
    )


def _started(attempts: list[Attempt]) -> datetime:
    times = [attempt.started_at for attempt in attempts if attempt.started_at is not None]
    if not times:
        raise UsageError("the report's attempts have no start times: give the run's date with --at")
    return datetime.fromtimestamp(int(min(times)), UTC)


def _version(attempt: Attempt) -> str:
    """The model version that answered (what the API said it was), else the model as requested."""
    return attempt.resolved_model or attempt.model


def _invalid(attempt: Attempt) -> bool:
    """Whether the attempt finished with an invalid verdict: its output could not be judged."""
    return attempt.status == "complete" and attempt.verdict is None


def _rows(attempts: list[Attempt], run_id: str, when: datetime) -> dict[str, list[Any]]:
    ordered = sorted(
        attempts, key=lambda a: (a.lve, a.model, a.source_file or "", a.source_line or 0, a.repetition)
    )
    return {
        "run": [run_id] * len(ordered),
        "run_at": [when] * len(ordered),
        "lve": [a.lve for a in ordered],
        "model": [a.model for a in ordered],
        "version": [_version(a) for a in ordered],
        "file": [a.source_file for a in ordered],
        "line": [a.source_line for a in ordered],
        "repetition": [a.repetition for a in ordered],
        "unsafe": [None if a.verdict is None else not a.verdict for a in ordered],
        **({"invalid": [_invalid(a) for a in ordered]} if any(map(_invalid, ordered)) else {}),
    }


def _parquet(columns: dict[str, list[Any]]) -> bytes:
    try:
        import pyarrow as pa
    except ImportError as exc:
        raise needs_data_extra(exc) from None
    sink = pa.BufferOutputStream()
    write_table(pa.table(columns, schema=arrow_schema("invalid" in columns)), sink)
    return bytes(sink.getvalue().to_pybytes())


def write_table(table: pyarrow.Table, where: Any) -> None:
    """A run's rows (sorted by LVE) as Parquet: zstd and dictionaries, so that a row costs a few bytes (the
    size estimate in docs/history.md), in row groups small enough that a reader of a few LVEs (a pull
    request's, a site worker's) skips the others by their statistics."""
    import pyarrow.parquet as pq

    pq.write_table(table, where, compression="zstd", use_dictionary=True, row_group_size=ROW_GROUP)


def _empty_column(path: Path, metadata: Any) -> str | None:
    """The first column that must always be set but holds a null: read from the row groups' statistics,
    or from the column itself where a file has none."""
    import pyarrow.parquet as pq

    index = {metadata.schema.column(i).name: i for i in range(metadata.num_columns)}
    names = [name for name in COLUMNS if name not in NULLABLE and name in index]
    for name in names:
        counts = []
        for group in range(metadata.num_row_groups):
            statistics = metadata.row_group(group).column(index[name]).statistics
            counts.append(
                statistics.null_count if statistics is not None and statistics.has_null_count else None
            )
        if None in counts:
            nulls = pq.read_table(path, columns=[name]).column(name).null_count
        else:
            nulls = sum(count for count in counts if count is not None)
        if nulls:
            return name
    return None


# The dates a run may carry, in ms since 1970 (run_at): from 1970 to the end of 9999, the last year Python's
# dates (and so every reader's text) hold. A year-200000 date is no run of lvegit's.
RUN_AT_RANGE: Final = (0, 253_402_300_799_999)


def _run_at_bounds(path: Path) -> tuple[int, int] | None:
    """The earliest and latest run_at of a file, as integers (a date out of range is no Python value), read
    from the column itself: a file's statistics are its writer's word. None for a file of no rows."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    values = pq.ParquetFile(path).read(columns=["run_at"]).column("run_at").cast(pa.int64())
    found = pc.min_max(values).as_py()
    return None if found["min"] is None else (found["min"], found["max"])


def uncompressed_size(metadata: Any) -> int:
    """The bytes a Parquet file's column chunks hold decompressed, by its metadata."""
    return sum(
        metadata.row_group(group).column(column).total_uncompressed_size
        for group in range(metadata.num_row_groups)
        for column in range(metadata.num_columns)
    )


@contextlib.contextmanager
def duckdb_connection() -> Iterator[duckdb.DuckDBPyConnection]:
    """An in-memory DuckDB database with DUCKDB_MEMORY_LIMIT (a backstop behind the bounds on each file:
    DuckDB would take 80% of the memory) that spills to a folder of its own, never to the working directory
    (the repository)."""
    import duckdb

    with tempfile.TemporaryDirectory(prefix="lvegit-history-") as spill:
        connection = duckdb.connect(
            ":memory:", config={"memory_limit": DUCKDB_MEMORY_LIMIT, "temp_directory": spill}
        )
        try:
            yield connection
        finally:
            connection.close()


def _longest(connection: Any, paths: list[str]) -> list[int]:
    """The longest value of each string column in these files, in bytes. DuckDB reads a value that a
    Parquet dictionary holds once, for all its rows, and knows each value's length: a 20 MB version in
    20,000 rows costs no more than one."""
    lengths = ", ".join(f"coalesce(max(strlen({name})), 0)" for name in STRING_COLUMNS)
    query = f"SELECT {lengths} FROM read_parquet($paths, union_by_name = true)"
    return list(connection.execute(query, {"paths": paths}).fetchone())


def _string_problems(files: list[HistoryFile]) -> dict[HistoryFile, str]:
    """Why each of these files that holds a string over MAX_STRING_BYTES (or that DuckDB cannot read) is
    refused, naming it and the column: all files in one reading, each on its own only where one fails."""
    import duckdb

    if not files:
        return {}
    with duckdb_connection() as connection:
        try:
            if max(_longest(connection, [str(file.path) for file in files])) <= MAX_STRING_BYTES:
                return {}
        except duckdb.Error:
            pass  # one of them: found below
        found = {}
        for file in files:
            try:
                longest = _longest(connection, [str(file.path)])
            except duckdb.Error as exc:
                found[file] = unreadable(file, exc)
                continue
            for name, length in zip(STRING_COLUMNS, longest, strict=True):
                if length > MAX_STRING_BYTES:
                    found[file] = (
                        f"{file.path}: the column '{name}' holds a value over {MAX_STRING_BYTES:,} bytes"
                    )
                    break
        return found


def _problem(file: HistoryFile, schema: Any, metadata: Any) -> str | None:
    """Why a run file that Parquet reads is no run file of lvegit's history, or None."""
    if metadata.num_rows > MAX_RUN_ROWS:
        return f"{file.path}: {metadata.num_rows:,} rows, over the {MAX_RUN_ROWS:,} a run may hold"
    if (size := uncompressed_size(metadata)) > MAX_RUN_UNCOMPRESSED_BYTES:
        return (
            f"{file.path}: {size:,} bytes decompressed, over the {MAX_RUN_UNCOMPRESSED_BYTES:,} a run file "
            "may hold"
        )
    found = (schema.metadata or {}).get(b"lvegit_history")
    layouts = {version.encode(): version == FORMAT_VERSION for version in (FORMAT_VERSION, WITHOUT_INVALID)}
    if found not in layouts or not schema.remove_metadata().equals(
        arrow_schema(layouts[found]).remove_metadata()
    ):
        return (
            f"{file.path}: not a run file of lvegit's history (version {WITHOUT_INVALID} or "
            f"{FORMAT_VERSION}); write them with lvegit history add"
        )
    empty = _empty_column(file.path, metadata)
    if empty is not None:
        return f"{file.path}: the column '{empty}' is empty in some rows, as lvegit never writes it"
    bounds = _run_at_bounds(file.path)
    if bounds is not None and (bounds[0] < RUN_AT_RANGE[0] or bounds[1] > RUN_AT_RANGE[1]):
        return f"{file.path}: the column 'run_at' holds a date outside the years 1970 to 9999"
    return None


def unreadable(file: HistoryFile, exc: Exception) -> str:
    """Why a run file cannot be read, naming it."""
    return f"{file.path}: not a Parquet file lvegit can read ({exc})"


def broken_pages(files: list[HistoryFile]) -> dict[Path, str]:
    """The files among `files` that Parquet cannot read whole (a corrupt or cut page their footers do not
    show), and why: what a query that fails asks, to name them."""
    import pyarrow.parquet as pq

    found = {}
    for file in files:
        try:
            pq.ParquetFile(file.path).read()
        except Exception as exc:  # as in check_files
            found[file.path] = unreadable(file, exc)
    return found


def check_files(files: list[HistoryFile]) -> tuple[list[HistoryFile], list[str]]:
    """The files that are history files of this layout, of at most MAX_RUN_ROWS rows and
    MAX_RUN_UNCOMPRESSED_BYTES, with no string over MAX_STRING_BYTES, no empty value where lvegit always
    writes one and no date out of range; and why each other one is not (naming it). The history as a whole
    holds at most MAX_HISTORY_ROWS rows and MAX_HISTORY_UNCOMPRESSED_BYTES (a usage error past that)."""
    import pyarrow.parquet as pq

    total = total_bytes = 0
    readable, problems = [], []
    for file in files:
        try:
            schema = pq.read_schema(file.path)
            metadata = pq.read_metadata(file.path)
            problem = _problem(file, schema, metadata)  # reads run_at: a corrupt page of it raises
        except Exception as exc:  # pyarrow raises ArrowInvalid, OSError and more for a broken file
            problems.append(unreadable(file, exc))
            continue
        if problem is not None:
            problems.append(problem)
            continue
        total += metadata.num_rows
        if total > MAX_HISTORY_ROWS:
            raise UsageError(f"{file.path}: the history holds over {MAX_HISTORY_ROWS:,} rows up to this file")
        total_bytes += uncompressed_size(metadata)
        if total_bytes > MAX_HISTORY_UNCOMPRESSED_BYTES:
            raise UsageError(
                f"{file.path}: the history holds over {MAX_HISTORY_UNCOMPRESSED_BYTES:,} bytes decompressed "
                "up to this file"
            )
        readable.append(dataclasses.replace(file, counts_invalid="invalid" in schema.names))
    refused = _string_problems(readable)
    problems.extend(refused.values())
    return [file for file in readable if file not in refused], problems
