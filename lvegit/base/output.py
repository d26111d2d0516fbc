"""Everything the commands print goes through here: one escaped line at a time, or JSON."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

import click

from lvegit.base.escape import console, json_text


def count(number: int, singular: str, plural: str = "") -> str:
    """`1 LVE`, `2 LVEs`, `2 mismatches`: a number with its noun in the right form."""
    return f"{number} {singular if number == 1 else plural or singular + 's'}"


def line(text: str = "") -> None:
    """Print one line; what an LVE or a model wrote cannot inject escapes, lines or secrets."""
    click.echo(console(text))


def styled(text: str, **style: Any) -> str:
    """`text` escaped as `line` escapes it, then styled (click.style: fg, bold, ...)."""
    return click.style(console(text), **style)


def styled_line(*parts: str) -> None:
    """Print one line of parts that are each escaped already (by `styled` or escape.console): colours on a
    terminal only, and never when NO_COLOR is set (https://no-color.org)."""
    click.echo("".join(parts), color=False if os.environ.get("NO_COLOR") else None)


def print_json(data: Any, indent: int | None = 2) -> None:
    """ASCII-only JSON escapes every control character a terminal could act on. `indent=None`: one line,
    for documents of 100,000s of entries (Python indents in pure Python, ten times slower)."""
    click.echo(json_text(json.dumps(data, indent=indent, ensure_ascii=True)))


_STREAMED = "\x00lvegit:streamed\x00"  # what stands for a streamed list until it is written


def print_json_streaming(
    data: dict[str, Any], key: str, items: Iterable[Any], indent: int | None = 2
) -> None:
    """`print_json` of `data` with `data[key]` the list of `items`, written one item at a time: a
    document of 100,000s of entries is never held whole, as objects or as text."""
    head, tail = json.dumps({**data, key: _STREAMED}, indent=indent, ensure_ascii=True).split(
        json.dumps(_STREAMED, ensure_ascii=True)
    )
    chunk = [head + "["]
    for number, item in enumerate(items):
        chunk.append(("," if number else "") + json.dumps(item, ensure_ascii=True))
        if len(chunk) >= 1000:  # written a thousand items at a time: an echo flushes
            click.echo(json_text("".join(chunk)), nl=False)
            chunk.clear()
    click.echo(json_text("".join(chunk) + "]" + tail))


def note(text: str) -> None:
    """A line about how the command works (not its data) on standard error: JSON output stays clean."""
    click.echo(console(f"lvegit: {text}"), err=True)
