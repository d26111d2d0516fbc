"""Where a README's blocks stand, as CommonMark reads them (markdown-it-py). lvegit splices lines into READMEs
written by hand: it must know which lines are the author's code or HTML (copied whole, never taken for a
field of lve-tools' form) and where lvegit's markers really stand (not quoted in a code block).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from markdown_it import MarkdownIt

# Where CommonMark ends a line: \n, \r\n or \r (str.splitlines also splits at \v, \f, \x1c.. and U+2028).
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
VERBATIM = ("fence", "code_block", "html_block")


def split_lines(text: str) -> list[str]:
    """The lines of `text`, each with its line ending, split where CommonMark ends a line."""
    return _LINE.findall(text)


@functools.cache
def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark")


@dataclass(frozen=True)
class Layout:
    """The blocks of some lines: `verbatim` maps the first line of each top-level code block (fenced or
    indented) and HTML block to its kind and last line; `paragraphs` holds the lines of top-level
    paragraphs; `html` the lines of HTML blocks at any depth (in a quote or a list too)."""

    verbatim: dict[int, tuple[str, int]]
    paragraphs: frozenset[int]
    html: frozenset[int]


def layout(lines: list[str], first: int = 0) -> Layout:
    """The layout of `lines[first:]` read as a document of its own, in the line numbers of `lines`."""
    verbatim: dict[int, tuple[str, int]] = {}
    paragraphs: set[int] = set()
    html: set[int] = set()
    for token in _parser().parse("".join(lines[first:])):
        if token.map is None:
            continue
        start, end = token.map[0] + first, token.map[1] + first
        if token.type == "html_block":
            html.update(range(start, end))
        if token.level != 0:
            continue
        if token.type in VERBATIM:
            verbatim[start] = (token.type, end - 1)
        elif token.type == "paragraph_open":
            paragraphs.update(range(start, end))
    return Layout(verbatim, frozenset(paragraphs), frozenset(html))


def html_markers(text: str, *markers: str) -> list[list[tuple[int, int]]]:
    """For each of `markers`, where it opens a line of an HTML block (after spaces or a quote's `>`): its
    offsets in `text`, each with its line number (1-based); the text is read once for all of them. A marker
    in a code block or inside a line of text is the author's text, not a marker."""
    lines = split_lines(text)
    html = layout(lines).html
    found: list[list[tuple[int, int]]] = [[] for _marker in markers]
    offset = 0
    for number, line in enumerate(lines):
        if number in html:
            for places, marker in zip(found, markers, strict=True):
                column = line.find(marker)
                if column >= 0 and not line[:column].strip(" \t>"):
                    places.append((offset + column, number + 1))
        offset += len(line)
    return found


def opens_fence(line: str) -> bool:
    """Whether a code fence opens at this line."""
    return layout([line]).verbatim.get(0, ("", 0))[0] == "fence"
