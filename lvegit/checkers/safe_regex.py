"""Regular expressions from LVEs, run with a time limit so catastrophic backtracking cannot hang a run.

The `regex` module is compatible with `re` (version 0 semantics) and takes a per-call timeout.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from lvegit.base.errors import InvalidValue, RegexTimeout

REGEX_TIMEOUT_SECONDS = 2.0

# The values of `regex`'s flags (its ASCII is not `re`'s), spelled out so that `regex` is imported on first
# use only: it is slow to import, and most commands never compile a pattern (a test pins the values).
ASCII, IGNORECASE, LOCALE, MULTILINE, DOTALL = 0x80, 0x2, 0x4, 0x8, 0x10
FLAGS = {
    "A": ASCII,
    "ASCII": ASCII,
    "I": IGNORECASE,
    "IGNORECASE": IGNORECASE,
    "L": LOCALE,
    "LOCALE": LOCALE,
    "M": MULTILINE,
    "MULTILINE": MULTILINE,
    "S": DOTALL,
    "DOTALL": DOTALL,
}
# What a checker lambda may use of `re`: these functions (each with the time limit) and flags.
REGEX_FUNCTIONS = ("search", "match", "fullmatch", "findall", "sub", "split", "escape")
LAMBDA_FLAGS = {name: value for name, value in FLAGS.items() if name not in ("L", "LOCALE")}


def parse_flags(flags: Any) -> int:
    """Flags as LVEs write them: 0, a name such as "I" or "DOTALL", a list of names, or "I|M"."""
    if flags in (0, None, "", []):
        return 0
    names = flags if isinstance(flags, list) else str(flags).split("|")
    value = 0
    for name in names:
        key = str(name).strip().upper().removeprefix("RE.")
        if key not in FLAGS:
            raise InvalidValue(f"unknown regex flag {name!r} (use A, I, L, M or DOTALL)")
        value |= FLAGS[key]
    return value


def compile_pattern(pattern: str, flags: int = 0) -> Any:
    if not isinstance(pattern, str):
        raise InvalidValue(f"a pattern must be a string, not {type(pattern).__name__}")
    import regex

    try:
        return regex.compile(pattern, flags | regex.VERSION0)
    except regex.error as exc:
        raise InvalidValue(f"invalid regular expression {pattern!r}: {exc}") from None


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


@functools.lru_cache(maxsize=1024)
def _compiled(pattern: str) -> Any:
    return compile_pattern(pattern)


def found(pattern: str, text: str) -> bool:
    """Whether `pattern` (compiled once, cached) is found in `text`, with the time limit."""
    return search(_compiled(pattern), text) is not None


@functools.cache
def regex_namespace() -> SimpleNamespace:
    """What a checker lambda sees as `re`: the usual functions, each with the time limit, and the flags."""
    import regex

    functions = {name: getattr(regex, name) for name in REGEX_FUNCTIONS}
    return SimpleNamespace(
        **{name: function if name == "escape" else _timed(function) for name, function in functions.items()},
        **LAMBDA_FLAGS,
    )
