"""Regular expressions from LVEs, run with a time limit so catastrophic backtracking cannot hang a run.

The `regex` module is compatible with `re` (version 0 semantics) and takes a per-call timeout.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import regex

REGEX_TIMEOUT_SECONDS = 2.0

FLAGS = {
    "A": regex.ASCII,
    "ASCII": regex.ASCII,
    "I": regex.IGNORECASE,
    "IGNORECASE": regex.IGNORECASE,
    "L": regex.LOCALE,
    "LOCALE": regex.LOCALE,
    "M": regex.MULTILINE,
    "MULTILINE": regex.MULTILINE,
    "S": regex.DOTALL,
    "DOTALL": regex.DOTALL,
}


class RegexTimeout(ValueError):
    """A pattern took longer than the time limit on one input."""


def parse_flags(flags: Any) -> int:
    """Flags as LVEs write them: 0, a name such as "I" or "DOTALL", a list of names, or "I|M"."""
    if flags in (0, None, "", []):
        return 0
    names = flags if isinstance(flags, list) else str(flags).split("|")
    value = 0
    for name in names:
        key = str(name).strip().upper().removeprefix("RE.")
        if key not in FLAGS:
            raise ValueError(f"unknown regex flag {name!r} (use A, I, L, M or DOTALL)")
        value |= FLAGS[key]
    return value


def compile_pattern(pattern: str, flags: int = 0) -> Any:
    if not isinstance(pattern, str):
        raise ValueError(f"a pattern must be a string, not {type(pattern).__name__}")
    try:
        return regex.compile(pattern, flags | regex.VERSION0)
    except regex.error as exc:
        raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from None


def _timed(function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, timeout=REGEX_TIMEOUT_SECONDS, **kwargs)
        except TimeoutError:
            raise RegexTimeout(f"regular expression timed out after {REGEX_TIMEOUT_SECONDS:g} s") from None

    return call


def search(compiled: Any, text: str) -> Any:
    return _timed(compiled.search)(text)


# What a checker lambda sees as `re`: the usual functions, each with the time limit.
REGEX_NAMESPACE = SimpleNamespace(
    search=_timed(regex.search),
    match=_timed(regex.match),
    fullmatch=_timed(regex.fullmatch),
    findall=_timed(regex.findall),
    sub=_timed(regex.sub),
    split=_timed(regex.split),
    escape=regex.escape,
    **{name: value for name, value in FLAGS.items() if name != "LOCALE" and name != "L"},
)
