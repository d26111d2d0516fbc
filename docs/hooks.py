"""mkdocs hook: the command reference, written from the commands themselves (lvegit.commands.reference)."""

from __future__ import annotations

from typing import Any

MARKER = "<!-- lvegit:command-reference -->"


def on_page_markdown(markdown: str, **_kwargs: Any) -> str:
    if MARKER not in markdown:
        return markdown
    from lvegit.cli import cli
    from lvegit.commands.reference import reference

    return markdown.replace(MARKER, reference(cli, "lvegit"))
