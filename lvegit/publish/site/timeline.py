"""An LVE's timeline on each model, placed at build time for templates/timeline.html to draw as inline
SVG: the unsafe rate of each run of the history (a dot; filled when the run reproduced, hollow when it did
not), a dashed rule and the version's name where the model's version changes, and the first and last dates.
Shape and text carry what colour shows, and the chart has a text alternative; the runs of each version are
in a table beside it.

A site of 10,000 LVEs on 20 models draws 200,000 charts of 50 runs: DuckDB places the dots as it reads the
runs (one query per batch of pages), and each kind of dot is one path."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Final

from lvegit.history.status import History

WIDTH, HEIGHT = 560, 150
LEFT, RIGHT, TOP, BOTTOM = 44, 12, 26, 26  # room for the axis labels and the version names
INNER = WIDTH - LEFT - RIGHT

_RUNS = """
CREATE TEMP TABLE runs AS
SELECT lve, model, epoch_ms(run_at) AS started, version, count(unsafe) AS n,
    count(*) FILTER (WHERE unsafe) AS k, count(*) - count(unsafe) AS failed
FROM attempts GROUP BY ALL
"""

_CHARTS = f"""
WITH judged AS (
    SELECT *, row_number() OVER w - 1 AS i, count(*) OVER (PARTITION BY lve, model) AS total,
        lag(version) OVER w IS DISTINCT FROM version AS new_version
    FROM runs WHERE n > 0
    WINDOW w AS (PARTITION BY lve, model ORDER BY started, version)
),
placed AS (
    SELECT *,
        round({LEFT} + CASE WHEN total = 1 THEN {INNER} / 2 ELSE {INNER} * i / (total - 1) END)::INTEGER AS x,
        round({TOP} + {HEIGHT - TOP - BOTTOM} * (1 - k / n))::INTEGER AS y
    FROM judged
)
SELECT lve, model,
    string_agg(x || ',' || y, ' ' ORDER BY i),
    coalesce(string_agg(x || ',' || y, ' ' ORDER BY i) FILTER (WHERE k > 0), ''),
    list(struct_pack(x := x, version := version) ORDER BY i) FILTER (WHERE new_version),
    strftime(to_timestamp(min(started) / 1000), '%Y-%m-%d'),
    strftime(to_timestamp(max(started) / 1000), '%Y-%m-%d'),
    count(*)
FROM placed GROUP BY lve, model
"""

_VERSIONS = """
SELECT lve, model, version, count(*), sum(k), sum(n), sum(failed),
    strftime(to_timestamp(min(started) / 1000), '%Y-%m-%d'),
    strftime(to_timestamp(max(started) / 1000), '%Y-%m-%d')
FROM runs GROUP BY ALL ORDER BY lve, model, min(started), version
"""


@dataclass(frozen=True)
class Chart:
    """Where a timeline's dots go (templates/timeline.html draws them): its polylines' points, each new
    model version's place, the first and last dates and how many runs it charts."""

    model: str
    line: str
    reproduced: str
    changes: list[tuple[int, str]]  # x and version of each run on a new model version
    first: str
    last: str
    runs: int


@dataclass(frozen=True)
class VersionRow:
    """The runs of one version of the model: a row of the table beside the chart."""

    version: str
    runs: int
    unsafe: int
    attempts: int
    failed: int
    first: str
    last: str


@dataclass(frozen=True)
class Timeline:
    chart: Chart | None  # None: no run of it was judged
    rows: list[VersionRow]


def timelines(history: History, lves: Sequence[str]) -> dict[tuple[str, str], Timeline]:
    """The timeline of each of these LVEs on each model of the history, by (LVE, model)."""
    charts, versions = history.queries(lves, None, [_RUNS], [_CHARTS, _VERSIONS])
    drawn = {(row[0], row[1]): _chart(row[1], *row[2:]) for row in charts}
    rows: dict[tuple[str, str], list[VersionRow]] = {}
    for lve, model, *row in versions:
        rows.setdefault((lve, model), []).append(VersionRow(*row))
    return {key: Timeline(drawn.get(key), table) for key, table in rows.items()}


def _twice_if_alone(points: str) -> str:
    """A polyline of one point draws no markers in every browser; the point twice does."""
    return points if " " in points else f"{points} {points}"


def _chart(
    model: str,
    line: str,
    reproduced: str,
    changes: list[dict[str, Any]],
    first: str,
    last: str,
    runs: int,
) -> Chart:
    return Chart(
        model,
        _twice_if_alone(line),
        _twice_if_alone(reproduced) if reproduced else "",
        [(change["x"], change["version"]) for change in changes],
        first,
        last,
        runs,
    )


# The chart's box, for the template: its size and the room left for the axis labels and version names.
BOX: Final = SimpleNamespace(WIDTH=WIDTH, HEIGHT=HEIGHT, LEFT=LEFT, RIGHT=RIGHT, TOP=TOP, BOTTOM=BOTTOM)
