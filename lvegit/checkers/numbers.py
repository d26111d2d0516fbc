"""Numbers as responses write them: NumberChecker's rule, and the lambdas' `number` (lambda_server), so that
a lambda worker need not load the checkers themselves."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

_SEPARATORS = re.compile(r"(?<=\d)[,\s_'\u00a0\u202f\u2009](?=\d{3}(\D|$))")


def normalize_number(value: Any) -> Decimal | None:
    """A number written as `1,234.50`, `1 234`, `1e3`, ` 42 ` or `42.0`; None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float | Decimal):
        return Decimal(str(value))
    if not isinstance(value, str):
        return None
    text = value.strip().rstrip(".")
    text = _SEPARATORS.sub("", text)
    try:
        number = Decimal(text)
    except InvalidOperation:
        return None
    return number if number.is_finite() else None
