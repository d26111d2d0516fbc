"""An LVE's timeline on one model, drawn at build time as inline SVG: the unsafe rate of each run of the
history (a dot; filled when the run reproduced, hollow when it did not), a dashed rule and the version's
name where the model's version changes, and the first and last dates. Shape and text carry what colour
shows, and the chart has a text alternative; the numbers are in a table beside it."""

from __future__ import annotations

from markupsafe import Markup, escape

from lvegit.history.status import RunPoint

WIDTH, HEIGHT = 560, 150
LEFT, RIGHT, TOP, BOTTOM = 44, 12, 26, 26  # room for the axis labels and the version names


def _x(index: int, count: int) -> float:
    inner = WIDTH - LEFT - RIGHT
    return LEFT + (inner / 2 if count == 1 else inner * index / (count - 1))


def _y(rate: float) -> float:
    return TOP + (HEIGHT - TOP - BOTTOM) * (1 - rate)


def timeline_svg(model: str, points: list[RunPoint], summary: str) -> Markup:
    """The chart of these runs (oldest first) of one LVE on `model`."""
    judged = [point for point in points if point.attempts]
    parts = [
        f'<svg class="timeline" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" width="{WIDTH}" height="{HEIGHT}">',
        f"<title>Unsafe rate of each run on {escape(model)}: {escape(summary)}</title>",
    ]
    for rate, label in ((0.0, "0%"), (0.5, "50%"), (1.0, "100%")):
        y = _y(rate)
        parts.append(f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>')
        parts.append(f'<text class="axis" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{label}</text>')
    previous = None
    for index, point in enumerate(judged):
        x = _x(index, len(judged))
        if point.version != previous:
            parts.append(
                f'<line class="version" x1="{x - 6:.1f}" x2="{x - 6:.1f}" y1="{TOP - 4}" '
                f'y2="{HEIGHT - BOTTOM}"/>'
            )
            parts.append(
                f'<text class="version" x="{x - 4:.1f}" y="{TOP - 10}">{escape(point.version)}</text>'
            )
            previous = point.version
    coordinates = [(_x(i, len(judged)), _y(p.unsafe / p.attempts)) for i, p in enumerate(judged)]
    if len(coordinates) > 1:
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in coordinates)
        parts.append(f'<polyline class="rate" points="{path}"/>')
    for point, (x, y) in zip(judged, coordinates, strict=True):
        kind = "reproduced" if point.unsafe else "clean"
        said = f"{escape(point.at[:10])} {escape(point.version)}: {point.unsafe}/{point.attempts} unsafe"
        parts.append(
            f'<circle class="run {kind}" cx="{x:.1f}" cy="{y:.1f}" r="4"><title>{said}</title></circle>'
        )
    if judged:
        parts.append(f'<text class="axis" x="{LEFT}" y="{HEIGHT - 6}">{escape(judged[0].at[:10])}</text>')
        if len(judged) > 1:
            last = escape(judged[-1].at[:10])
            parts.append(
                f'<text class="axis" x="{WIDTH - RIGHT}" y="{HEIGHT - 6}" text-anchor="end">{last}</text>'
            )
    parts.append("</svg>")
    return Markup("".join(parts))
