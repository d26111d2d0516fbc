"""An LVE's timeline on each model, drawn at build time as inline SVG: the unsafe rate of each run of the
history (a dot; filled when the run reproduced, hollow when it did not), a dashed rule and the version's
name where the model's version changes, and the first and last dates. Shape and text carry what colour
shows, and the chart has a text alternative; the runs of each version are in a table beside it.

A site of 10,000 LVEs on 20 models draws 200,000 charts of 50 runs: DuckDB places the dots as it reads the
runs (one query per batch of pages), and each kind of dot is one path."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from markupsafe import Markup, escape

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
class Timeline:
    chart: Markup
    table: Markup  # the rows of the table of runs by model version


def timelines(history: History, lves: Sequence[str]) -> dict[tuple[str, str], Timeline]:
    """The timeline of each of these LVEs on each model of the history, by (LVE, model)."""
    charts, versions = history.queries(lves, None, [_RUNS], [_CHARTS, _VERSIONS])
    drawn = {(row[0], row[1]): _svg(row[1], *row[2:]) for row in charts}
    rows: dict[tuple[str, str], list[str]] = {}
    for lve, model, version, runs, unsafe, attempts, failed, first, last in versions:
        rows.setdefault((lve, model), []).append(
            f"<tr><td>{escape(version)}</td><td>{runs}</td><td>{first}</td><td>{last}</td>"
            f"<td>{unsafe}/{attempts}</td><td>{failed}</td></tr>"
        )  # built here, not in the template: a page may have a hundred rows, each escaped once
    return {
        key: Timeline(drawn.get(key, Markup("")), Markup("\n".join(table))) for key, table in rows.items()
    }


def _twice_if_alone(points: str) -> str:
    """A polyline of one point draws no markers in every browser; the point twice does."""
    return points if " " in points else f"{points} {points}"


# Once per page, before its charts: the dots their polylines put on each run.
MARKERS: Final = Markup(
    '<svg class="markers" width="0" height="0" aria-hidden="true"><defs>'
    + "".join(
        f'<marker id="run-{kind}" viewBox="-5 -5 10 10" markerWidth="10" markerHeight="10" '
        f'markerUnits="userSpaceOnUse"><circle class="run {kind}" r="4"/></marker>'
        for kind in ("clean", "reproduced")
    )
    + "</defs></svg>"
)


def _grid() -> str:
    """What every chart has: the 0%, 50% and 100% lines and their labels."""
    parts = []
    for rate, label in ((0.0, "0%"), (0.5, "50%"), (1.0, "100%")):
        y = TOP + (HEIGHT - TOP - BOTTOM) * (1 - rate)
        parts.append(f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.0f}" y2="{y:.0f}"/>')
        parts.append(f'<text class="axis" x="{LEFT - 6}" y="{y + 4:.0f}" text-anchor="end">{label}</text>')
    return "".join(parts)


GRID: Final = _grid()


def _svg(
    model: str,
    line: str,
    reproduced: str,
    changes: list[dict[str, Any]],
    first: str,
    last: str,
    runs: int,
) -> Markup:
    parts = [
        f'<svg class="timeline" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" width="{WIDTH}" height="{HEIGHT}">',
        f"<title>Unsafe rate of each of {runs} runs on {escape(model)}, {first} to {last}</title>",
    ]
    parts.append(GRID)
    for change in changes:
        x = change["x"] - 6
        parts.append(
            f'<line class="version" x1="{x:.0f}" x2="{x:.0f}" y1="{TOP - 4}" y2="{HEIGHT - BOTTOM}"/>'
        )
        parts.append(
            f'<text class="version" x="{x + 2:.0f}" y="{TOP - 10}">{escape(change["version"])}</text>'
        )
    # The dots are the markers of two polylines (MARKERS): every run hollow along the rate's line, then
    # the runs that reproduced filled, on a line that is not drawn. A few bytes a run: a page may chart
    # 20 models of 50 runs, a site 10,000 pages.
    parts.append(f'<polyline class="rate" points="{_twice_if_alone(line)}"/>')
    if reproduced:
        parts.append(f'<polyline class="reproduced" points="{_twice_if_alone(reproduced)}"/>')
    parts.append(f'<text class="axis" x="{LEFT}" y="{HEIGHT - 6}">{first}</text>')
    if runs > 1:
        parts.append(
            f'<text class="axis" x="{WIDTH - RIGHT}" y="{HEIGHT - 6}" text-anchor="end">{last}</text>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))
