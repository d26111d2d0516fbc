"""Everything the commands print goes through here: one escaped line at a time, or JSON."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

import click

from lvegit.base.escape import console, document_lines, json_text


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


def json_lines(documents: Iterable[Any]) -> str:
    """One JSON document a line, ASCII-only as print_json writes it: what print_json_lines prints and a
    file of them holds, the same bytes."""
    return json_text("".join(json.dumps(document, ensure_ascii=True) + "\n" for document in documents))


def print_json_lines(documents: Iterable[Any]) -> None:
    click.echo(json_lines(documents), nl=False)


def print_document(text: str) -> None:
    """A document that is not JSON (JUnit XML), each line escaped as `line` escapes one, nothing indented."""
    click.echo(document_lines(text), nl=False)


_STREAMED = "\x00lvegit:streamed\x00"  # what stands for a streamed list until it is written


class JsonStream:
    """A JSON document (as `print_json` writes it) whose list `key` is written an item at a time, as the
    items come: a document of 100,000s of entries is never held whole, as objects or as text. `head`
    holds the document's keys before the list, in its order; `end` takes the whole document, `key` left
    empty."""

    def __init__(self, key: str, head: dict[str, Any], indent: int | None = 2) -> None:
        self.key, self.indent = key, indent
        self._chunk = [self._split(head)[0] + "["]
        self._items = 0

    def _split(self, data: dict[str, Any]) -> tuple[str, str]:
        text = json.dumps({**data, self.key: _STREAMED}, indent=self.indent, ensure_ascii=True)
        head, tail = text.split(json.dumps(_STREAMED, ensure_ascii=True))
        return head, tail

    def item(self, value: Any) -> None:
        self._chunk.append(("," if self._items else "") + json.dumps(value, ensure_ascii=True))
        self._items += 1
        if len(self._chunk) >= 1000:  # written a thousand items at a time: an echo flushes
            click.echo(json_text("".join(self._chunk)), nl=False)
            self._chunk.clear()

    def end(self, data: dict[str, Any]) -> None:
        click.echo(json_text("".join(self._chunk) + "]" + self._split(data)[1]))
        self._chunk.clear()


def note(text: str) -> None:
    """A line about how the command works (not its data) on standard error: JSON output stays clean."""
    click.echo(console(f"lvegit: {text}"), err=True)
