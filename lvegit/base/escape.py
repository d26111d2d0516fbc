"""Escaping what an LVE or a model wrote for each place lvegit writes it, and masking known secrets.

- console: one line on a terminal or in a CI log. Control characters (ANSI escapes, carriage returns,
  newlines that could start a `::workflow-command::` line) and the invisible characters that reorder or
  hide text (bidi overrides and isolates, zero-width characters) are shown as escapes; console_lines
  keeps a message's own line breaks, each continuation line indented so that none starts a command.
- markdown / code_block: PR comments and job summaries. No raw HTML, no @mentions that notify, no fence
  that closes early.
- workflow_data / workflow_property: the message and the properties of a GitHub workflow command.
- shown_text: text of a page or a feed (the site, its Atom feed), whose markup is escaped where it is written.
- rendered_markdown: text of a field that readers render as CommonMark (OSV's `details`, SARIF's markdown
  help): its lines kept, no raw HTML, no links or images of its own.
Every function but shown_text masks the values of secret-looking environment variables.
"""

from __future__ import annotations

import functools
import html
import os
import re

SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)", re.IGNORECASE)
MIN_SECRET_LENGTH = 6
MASK = "***"
# Bidi embeddings, overrides, isolates and marks, zero-width and invisible formatting characters: they make a
# line read otherwise than it is (CVE-2021-42574, "Trojan Source").
_INVISIBLE = "\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\ufff9-\ufffb"
_CONTROL = re.compile(f"[\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029{_INVISIBLE}]")
_CONTROL_NOT_LINES = re.compile(f"[\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f-\\x9f\\u2028\\u2029{_INVISIBLE}]")
_INVISIBLE_ONLY = re.compile(f"[{_INVISIBLE}]")
# A URL scheme or www. that GitHub would turn into a link (a decimal IP has no dot for escaping to break).
_AUTOLINK = re.compile(r"(?i)\b([a-z][a-z0-9+\-]*:(?=//)|www(?=\\?\.))")
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~>])")
_MENTION = re.compile(r"@(?=[A-Za-z0-9])")


def known_secrets() -> tuple[str, ...]:
    """Values of environment variables whose names say they are secret, longest first: read from the
    environment as it is at each call, so that a secret set after start-up is masked too. (Every line
    printed asks: what is worked out from a name or a set of values once is remembered.)"""
    # Only the names are decoded on each pass (their test is remembered); a value is read for a secret name.
    environ = os.environ
    return _longest_first(
        tuple(
            value
            for name in environ
            if _is_secret_name(name) and len(value := environ.get(name, "")) >= MIN_SECRET_LENGTH
        )
    )


@functools.lru_cache(maxsize=1024)
def _is_secret_name(name: str) -> bool:
    return SECRET_NAME.search(name) is not None


@functools.lru_cache(maxsize=8)
def _longest_first(values: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(sorted(set(values), key=len, reverse=True))


def mask(text: str) -> str:
    for secret in known_secrets():
        text = text.replace(secret, MASK)
    return text


def _escape_control(match: re.Match[str]) -> str:
    char = match.group()
    return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(
        char, f"\\x{ord(char):02x}" if ord(char) < 256 else f"\\u{ord(char):04x}"
    )


def console(text: str) -> str:
    """Safe as one line of terminal or log output. GitHub's runner reads a line as a workflow command when
    it starts with `::` after its leading blanks, or holds the legacy `##[command]` anywhere: neither
    can come through."""
    text = _CONTROL.sub(_escape_control, mask(text)).replace("##[", "#\\x23[")
    stripped = text.lstrip()
    if stripped.startswith("::"):
        text = text[: len(text) - len(stripped)] + "\\x3a" + stripped[1:]
    return text


def console_lines(text: str) -> str:
    """A message of several lines (lvegit's own line breaks) safe on a terminal or in a log: each line
    escaped as `console` escapes one, every line after the first indented."""
    first, *rest = text.split("\n")
    return "\n".join([console(first), *(f"  {console(line)}" for line in rest)])


def json_text(text: str) -> str:
    """JSON (ASCII-only, so no control character) that no log line reads as a legacy workflow command."""
    return mask(text).replace("##[", "#\\u0023[")


def markdown(text: str) -> str:
    """Inline markdown text that renders as the literal characters, with no HTML and no mentions."""
    text = console(text)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MARKDOWN_SPECIAL.sub(r"\\\1", text)
    text = _AUTOLINK.sub("\\1\u200b", text)
    return _MENTION.sub("@\u200b", text)


_WORD = re.compile(r"[\w.\-]+", re.ASCII)


def code_span(text: str) -> str:
    """A word (a sha, an id) as inline code, where it is ASCII letters, digits, `.`, `-` and `_` only;
    anything else as `markdown` escapes it (a backtick would end the span early, a bar the table cell)."""
    return f"`{text}`" if _WORD.fullmatch(text) else markdown(text)


def html_text(text: str) -> str:
    """Text inside an HTML element (such as <summary>), where markdown escapes would show literally."""
    return _MENTION.sub("@\u200b", _AUTOLINK.sub("\\1\u200b", html.escape(console(text))))


def shown_text(text: str) -> str:
    """Text as a page or a feed shows it: valid Unicode (a lone surrogate, from a JSON escape, becomes
    U+FFFD), control characters and the invisible ones that reorder or hide text shown as escapes, line
    breaks and tabs kept. Markup is escaped where the text is written (Jinja's autoescaping, ElementTree).
    Secrets are not masked: a site shows 100,000s of strings, none from lvegit's environment."""
    text = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return _CONTROL_NOT_LINES.sub(_escape_control, text)


_LINE_COMMAND_COLONS = re.compile(r"(?m)^([ \t]*)::")


def code_block(text: str, max_chars: int | None = None, language: str = "text") -> str:
    """A fenced block that no backtick run in `text` can close early, and whose lines no log reads as a
    workflow command when the file holding it is printed in CI."""
    text = _CONTROL.sub(lambda m: m.group() if m.group() in "\n\t" else _escape_control(m), mask(text))
    text = _LINE_COMMAND_COLONS.sub(r"\1\\x3a:", text.replace("##[", "#\\x23["))  # as `console` shows them
    if max_chars is not None and len(text) > max_chars:
        text = text[:max_chars] + "\n[... truncated]"
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text}\n{fence}"


def workflow_data(text: str) -> str:
    """The message part of `::error ...::message` (GitHub's escaping of data; other control characters and
    the invisible ones that reorder text are shown as escapes)."""
    text = _CONTROL.sub(lambda m: "\n" if m.group() == "\n" else _escape_control(m), mask(text))
    return text.replace("%", "%25").replace("\n", "%0A")


def workflow_property(text: str) -> str:
    """A property value such as `file=` of a workflow command."""
    return workflow_data(text).replace(":", "%3A").replace(",", "%2C")


_MARKDOWN_LINKS = re.compile(r"([\\`\[\]])")


def rendered_markdown(text: str) -> str:
    """Text for a field that its readers render as CommonMark (an OSV record's `details`, a SARIF rule's
    `help.markdown`): line breaks kept; control and invisible characters shown as escapes; `&`, `<` and `>`
    as entities, so no HTML comes through; backslashes, backticks and brackets escaped, so the text makes
    no link, image or code span of its own; secrets masked."""
    text = _CONTROL_NOT_LINES.sub(_escape_control, mask(text)).replace("\r\n", "\n").replace("\r", "\n")
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MENTION.sub("@\u200b", _MARKDOWN_LINKS.sub(r"\\\1", text))


_LINE_COMMAND = re.compile(r"(?m)^([ \t]*):")


def markdown_lines(text: str) -> str:
    """Text of several lines for a markdown file lvegit writes (a draft's README): as `rendered_markdown`
    (no control or invisible character, no HTML, no link of its own), and no line a log reads as a workflow
    command when the file is printed in CI: a leading `:` gets a backslash, which CommonMark does not
    show, and `##[` is already `##\\[`."""
    return _LINE_COMMAND.sub(r"\1\\:", rendered_markdown(text))


def document_lines(text: str) -> str:
    """A document (XML, JSON) written to a terminal or a log: each line escaped as `console` escapes one,
    its line breaks kept and nothing indented."""
    return "\n".join(console(line) for line in text.split("\n"))
