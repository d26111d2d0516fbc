"""`str.format_map` semantics for untrusted templates, without attribute or index access.

Prompts and checker arguments come from pull requests. Plain `str.format` would let `{x.__class__}` walk
object attributes, so only bare names are allowed as fields; `{{` and `}}` stay literal braces. A format
spec's width and precision are bounded, and so is what a template fills to, in UTF-8 bytes counted piece by
piece before they are joined: `{a:>999999999}` would spend gigabytes on one field, and `{a}` a thousand times
over a long value a thousand times its size.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from lvegit.base.errors import InvalidValue

_FORMATTER = string.Formatter()
MAX_SPEC_NUMBER = 1_000  # the widest width or precision a format spec may ask for
MAX_FILLED_BYTES = 4 * 1024 * 1024  # what one template may fill to: an instance line's limit
_SPEC_NUMBER = re.compile(r"\d+")
_NAME = re.compile(r"[^.\[\]{},\s]*[A-Za-z_][^.\[\]{},\s]*")
# A {parameter} as a prompt shows it, for marking it when the prompt is displayed (show, site).
SHOWN_PARAMETER = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")


class TemplateError(InvalidValue):
    """A template is malformed or names a field that has no value."""


class FilledTooLarge(TemplateError):
    """A template would fill to more than its bound."""


def _fields(text: str) -> Iterator[tuple[str, str | None, str | None, str | None]]:
    try:
        yield from _FORMATTER.parse(text)
    except ValueError as exc:
        raise TemplateError(
            f"malformed template: {exc} (write '{{{{' or '}}}}' for a literal brace)"
        ) from None


LITERAL_BRACES = "write '{{' and '}}' for literal braces"


def braces_hint(name: str) -> str:
    """For a placeholder that no parameter has: the way to write literal braces, where the name is quoted
    as a JSON key is (`{"id": 7}` in a tool's result reads as the placeholder `"id"`)."""
    return f" ({LITERAL_BRACES})" if name[:1] in ("'", '"') else ""


def is_parameter_name(name: str) -> bool:
    """A key `str.format_map` looks up as it is (no attribute or index access), with a letter or `_` in it
    and no comma or space, so regex quantifiers such as `{1,6}` are never taken for one. Real LVEs use
    names such as `phone-number`."""
    return _NAME.fullmatch(name) is not None


def _require_name(field: str) -> None:
    if not is_parameter_name(field):
        raise TemplateError(f"'{{{field}}}' is not a parameter name ({LITERAL_BRACES})")


def _check_spec(field: str, spec: str | None) -> None:
    if not spec:
        return
    if "{" in spec or "}" in spec:
        raise TemplateError(f"nested fields in the format spec of '{field}' are not supported")
    if any(int(number) > MAX_SPEC_NUMBER for number in _SPEC_NUMBER.findall(spec)):
        raise TemplateError(
            f"the format spec '{spec[:40]}' of '{field}' asks for a width or precision over {MAX_SPEC_NUMBER}"
        )


def placeholders(text: str) -> list[str]:
    """The field names of `text`, in order of appearance (duplicates kept once)."""
    names: list[str] = []
    for _literal, field, spec, _conversion in _fields(text):
        if field is None:
            continue
        _require_name(field)
        _check_spec(field, spec)
        if field not in names:
            names.append(field)
    return names


def utf8_size(text: str) -> int:
    """The bytes of `text` in UTF-8; ASCII text (most is) is not encoded to be counted."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def fill(
    text: str,
    values: Mapping[str, Any],
    escape: Callable[[str], str] | None = None,
    *,
    limit: int = MAX_FILLED_BYTES,
    what: str = "the template",
) -> str:
    """Substitute `{name}` fields from `values`; every field must be a bare name that has a value. `escape`
    (e.g. a regex escape) is applied to each field as formatted, never to the template's own text. A
    TemplateError where the result would pass `limit` bytes, raised before it is joined."""
    parts: list[str] = []
    filled = 0

    def add(part: str) -> None:
        nonlocal filled
        filled += utf8_size(part)
        if filled > limit:
            raise FilledTooLarge(f"{what} fills to more than {limit:,} bytes")
        parts.append(part)

    for literal, field, spec, conversion in _fields(text):
        add(literal)
        if field is None:
            continue
        _require_name(field)
        if field not in values:
            raise TemplateError(f"no value for parameter '{field}'")
        _check_spec(field, spec)
        value = values[field]
        if conversion == "r":
            value = repr(value)
        elif conversion == "a":
            value = ascii(value)
        elif conversion == "s":
            value = str(value)
        try:
            formatted = format(value, spec or "")
        except (ValueError, TypeError) as exc:
            raise TemplateError(f"cannot format parameter '{field}' with spec '{spec}': {exc}") from None
        add(escape(formatted) if escape is not None else formatted)
    return "".join(parts)
