"""The work a checker lambda may do for one verdict, counted as it runs.

A lambda from test.json is an expression, but expressions can loop (`[0 for i in range(10**5) for j in
range(10**5)]`), copy (`sum(len(r[:]) for i in range(10**6))`) and build (`r.replace('', r)`) without end,
and once a loop runs in C nothing can interrupt it. So the compiled lambda routes every operation whose
cost grows with its operands through these helpers (safe_lambda._Guard): each charges what it reads and
builds to the verdict's budget before the next step, and sizes that no verdict needs are refused before
they are allocated. A verdict over budget ends in an error naming the budget, like any other bad lambda.

This is an estimate, and work done in C between two steps escapes it: what bounds a verdict is the lambda
worker it runs in (lambda_worker: an address-space limit, and a kill past its time). The charges stay there
for clear errors: a runaway loop ends at once, saying so, instead of at the kill.

Units are characters: a container's item counts CONTAINER_ITEM, a loop step or a call STEP (the
interpreter's work for one), a big integer its bytes. The budget allows about a dozen passes over the
largest response an instance line holds (4 MB), fifty over a million characters, or a million loop steps:
about a second.
"""

from __future__ import annotations

import operator
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from lvegit.base.errors import InvalidValue

MAX_LAMBDA_WORK = 50_000_000
STEP = 50
CONTAINER_ITEM = 8
MAX_POWER_EXPONENT = 10_000
MAX_SEQUENCE_REPEAT = 1_000_000
MAX_INTEGER_BITS = 1_000_000

_OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "Add": operator.add,
    "Sub": operator.sub,
    "Mult": operator.mul,
    "Div": operator.truediv,
    "FloorDiv": operator.floordiv,
    "Mod": operator.mod,
    "Pow": operator.pow,
}
# Operators whose time on two big integers grows with the product of their sizes.
_LONG_ARITHMETIC = frozenset({"Mult", "FloorDiv", "Mod", "Div"})
# Methods of str whose result can be far larger than what they read: refused before they build it.
_PADDING = frozenset({"center", "ljust", "rjust", "zfill"})
# `%` formatting: widths and precisions written in the format (a `*` takes one from the arguments).
_PERCENT_FIELD = re.compile(r"%(?:\([^)]*\))?[#0\- +]*(\*|\d+)?(?:\.(\*|\d+))?")


class _Budget(threading.local):
    left = MAX_LAMBDA_WORK


_budget = _Budget()
_CONTAINERS = frozenset({list, tuple, dict, set, frozenset, range})
_FREE = frozenset({bool, float, type(None)})


def start_verdict() -> None:
    """A new verdict: the whole budget again (per thread: verdicts of different threads do not share)."""
    _budget.left = MAX_LAMBDA_WORK


def charge(work: int) -> None:
    budget = _budget
    budget.left -= work
    if budget.left < 0:
        _over()


def _over() -> None:
    raise InvalidValue(f"the lambda does more work than one verdict may ({MAX_LAMBDA_WORK:,} units)")


def size(value: Any) -> int:
    """What reading, copying or building `value` costs (values are JSON's and builtins': exact types)."""
    kind = type(value)
    if kind is str or kind is bytes:
        return len(value)
    if kind in _FREE:
        return 0
    if kind is int:
        return value.bit_length() >> 3  # type: ignore[no-any-return]
    if kind in _CONTAINERS:
        try:
            return CONTAINER_ITEM * len(value)
        except OverflowError:  # a range longer than sys.maxsize
            return MAX_LAMBDA_WORK + 1
    return 0


# The helpers below are called for every operation of every verdict: strings, the commonest values, are
# measured in place, and the budget is charged without a call where that is simple.


def read(value: Any) -> Any:
    """A value an operation reads or built (a comparison's operand, a slice, a display, an f-string)."""
    budget = _budget
    budget.left -= len(value) if type(value) is str else size(value)
    if budget.left < 0:
        _over()
    return value


def iterate(iterable: Iterable[Any]) -> Iterator[Any]:
    """A comprehension's loop: each step is charged with the item it takes."""
    budget = _budget
    for item in iterable:
        budget.left -= STEP + (len(item) if type(item) is str else size(item))
        if budget.left < 0:
            _over()
        yield item


def binary(kind: str, left: Any, right: Any) -> Any:
    """`left <kind> right` (kind: the ast operator's name), refused where the result would be too large."""
    charge(STEP + size(left) + size(right))
    if type(left) is int and type(right) is int and kind in _LONG_ARITHMETIC:
        # schoolbook time: digits (30 bits) times digits; a unit is about ten of their steps
        charge((left.bit_length() // 30) * (right.bit_length() // 30) // 10)
    if kind == "Pow":
        _check_power(left, right)
    elif kind == "Mult":
        _check_repeat(left, right)
    elif kind == "Mod" and isinstance(left, str):
        _check_percent_format(left, right)
    return read(_OPERATORS[kind](left, right))


def call(function: Any, /, *args: Any, **kwargs: Any) -> Any:
    """A call of a builtin, a method or a nested lambda: charged with what it reads, its receiver
    included, and with what it returns."""
    work = STEP
    for argument in args:
        work += len(argument) if type(argument) is str else size(argument)
    for argument in kwargs.values():
        work += size(argument)
    receiver = None if type(function) is type else getattr(function, "__self__", None)
    if type(receiver) is str:
        args = _check_string_method(receiver, function.__name__, args, kwargs)
        work += len(receiver)
    elif receiver is not None:
        work += size(receiver)
    charge(work)
    return read(function(*args, **kwargs))


def _check_power(base: Any, exponent: Any) -> None:
    if not isinstance(exponent, int):
        return
    if abs(exponent) > MAX_POWER_EXPONENT:
        raise InvalidValue(f"exponent {exponent} is larger than {MAX_POWER_EXPONENT}")
    if isinstance(base, int) and base.bit_length() * exponent > MAX_INTEGER_BITS:
        raise InvalidValue(f"a power of more than {MAX_INTEGER_BITS:,} bits")


def _check_repeat(left: Any, right: Any) -> None:
    if isinstance(left, int) and isinstance(right, int):
        if left.bit_length() + right.bit_length() > MAX_INTEGER_BITS:
            raise InvalidValue(f"a product of more than {MAX_INTEGER_BITS:,} bits")
        return
    for sequence, times in ((left, right), (right, left)):
        repeats = isinstance(sequence, str | list | tuple) and isinstance(times, int)
        if repeats and len(sequence) * times > MAX_SEQUENCE_REPEAT:
            raise InvalidValue(f"repeating a sequence beyond {MAX_SEQUENCE_REPEAT} items")


def _check_percent_format(text: str, values: Any) -> None:
    for field in _PERCENT_FIELD.finditer(text):
        for number in field.groups():
            if number == "*":
                raise InvalidValue("'%' formatting with a width taken from the arguments ('*')")
            if number is not None and len(number) > 6:
                raise InvalidValue(f"'%' formatting with a width of {number}")


def _check_string_method(
    text: str, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[Any, ...]:
    """Charge what a method of str will build before it builds it; `join` reads its parts first (they
    may come from a generator), so the parts it is given are returned."""
    if name in _PADDING and args and isinstance(args[0], int):
        charge(args[0])
    elif name == "expandtabs":
        tab_size = args[0] if args else kwargs.get("tabsize", 8)
        if isinstance(tab_size, int):
            charge(text.count("\t") * tab_size)
    elif name == "replace" and len(args) >= 2 and isinstance(args[0], str) and isinstance(args[1], str):
        found = text.count(args[0]) if args[0] else len(text) + 1
        if len(args) > 2 and isinstance(args[2], int) and args[2] >= 0:
            found = min(found, args[2])
        charge(found * len(args[1]))
    elif name == "join" and len(args) == 1:
        parts = list(args[0])
        charge(sum(map(size, parts)) + len(text) * len(parts))
        return (parts,)
    return args
