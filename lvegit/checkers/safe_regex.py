"""Regular expressions from LVEs, run with a time limit so catastrophic backtracking cannot hang a run.

The `regex` module is compatible with `re` (version 0 semantics) and takes a per-call timeout.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from lvegit.base.errors import InvalidValue, RegexTimeout
from lvegit.checkers.budget import budget_spent, verdict_seconds_left

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


# What a pattern may expand to when compiled: `regex` unrolls counted repeats of literals, so that
# `(?:x{3000}){3000}` took 2.4 GB and seconds to compile, outside the matching's time limit. Real patterns
# (`\d{3}-\d{4}`, `[a-z]{1,60}`) expand to hundreds.
MAX_PATTERN_SIZE = 100_000
_COUNT = re.compile(r"\{(\d*)(?:,(\d*))?\}")
_BRACED_ESCAPE = re.compile(r"\\[pPNxu]\{[^}]*\}|\\.", re.DOTALL)


@functools.lru_cache(maxsize=1024)  # a lambda's re call asks it again for every verdict
def unrolled_size(pattern: str) -> int:
    """An upper bound of the atoms a pattern expands to when counted repeats are unrolled: each atom (a
    character, an escape, a class) is 1, a group the sum of its parts, and a count `{n}` or `{n,m}` multiplies
    what it repeats by its largest number (alternatives are added, so the bound errs high)."""
    stack: list[int] = [0]  # the size of each open group so far
    last = 0  # the size of the atom or group a count would repeat
    position = 0
    while position < len(pattern):
        char = pattern[position]
        if char == "\\":
            escape = _BRACED_ESCAPE.match(pattern, position)
            position = escape.end() if escape else position + 1
            last = 1
        elif char == "[":
            end = _class_end(pattern, position)
            position, last = end, 1
        elif char == "(":
            stack.append(0)
            position, last = position + 1, 0
            continue
        elif char == ")" and len(stack) > 1:
            last = stack.pop()
            position += 1
        elif char == "{" and (count := _COUNT.match(pattern, position)):
            numbers = [int(n) for n in count.groups() if n]
            stack[-1] += last * (max(numbers, default=1) - 1)  # the atom itself is counted already
            position, last = count.end(), 0
            continue
        else:
            position, last = position + 1, 0 if char in "*+?|" else 1
        stack[-1] += last
    return sum(stack)


def _class_end(pattern: str, start: int) -> int:
    """The position after the character class that opens at `start` (`[]a]` and `[^]a]` hold a `]`)."""
    position = start + 1
    if position < len(pattern) and pattern[position] == "^":
        position += 1
    if position < len(pattern) and pattern[position] == "]":
        position += 1
    while position < len(pattern) and pattern[position] != "]":
        position += 2 if pattern[position] == "\\" else 1
    return position + 1


def check_size(pattern: str) -> None:
    """Refuse a pattern whose compiling would take what no verdict needs (see MAX_PATTERN_SIZE)."""
    if unrolled_size(pattern) > MAX_PATTERN_SIZE:
        raise InvalidValue(
            f"the regular expression {pattern[:60]!r} repeats too much: its counted repeats expand to more "
            f"than {MAX_PATTERN_SIZE:,} parts"
        )


def compile_pattern(pattern: str, flags: int = 0) -> Any:
    if not isinstance(pattern, str):
        raise InvalidValue(f"a pattern must be a string, not {type(pattern).__name__}")
    check_size(pattern)
    import regex

    try:
        return regex.compile(pattern, flags | regex.VERSION0)
    except regex.error as exc:
        raise InvalidValue(f"invalid regular expression {pattern!r}: {exc}") from None


def _timed(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function` with the time limit: REGEX_TIMEOUT_SECONDS, or what is left of the budgets of the verdict
    being given where that is less (a pattern judged over 200 tool calls, each under its limit, held a
    check 39 s under a 5 s budget)."""

    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        left = verdict_seconds_left()
        timeout = REGEX_TIMEOUT_SECONDS if left is None else min(REGEX_TIMEOUT_SECONDS, left)
        if timeout <= 0:
            raise budget_spent()
        try:
            return function(*args, timeout=timeout, **kwargs)
        except TimeoutError:
            if timeout < REGEX_TIMEOUT_SECONDS:
                raise budget_spent() from None
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
        **{
            name: function if name == "escape" else _bounded(function) for name, function in functions.items()
        },
        **LAMBDA_FLAGS,
    )


def _bounded(function: Callable[..., Any]) -> Callable[..., Any]:
    """A `re` function for lambdas: its pattern compiled within MAX_PATTERN_SIZE, its matching timed."""
    timed = _timed(function)

    @functools.wraps(function)
    def call(pattern: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(pattern, str):
            check_size(pattern)
        return timed(pattern, *args, **kwargs)

    return call
