from __future__ import annotations

import pytest
import regex

from lvegit.base.errors import RegexTimeout
from lvegit.checkers.safe_regex import compile_pattern, parse_flags, search


@pytest.mark.parametrize(
    ("flags", "value"),
    [
        (0, 0),
        (None, 0),
        ("I", regex.IGNORECASE),
        ("IGNORECASE", regex.IGNORECASE),
        ("DOTALL", regex.DOTALL),
        ("m", regex.MULTILINE),
        (["A", "S"], regex.ASCII | regex.DOTALL),
        ("I|M", regex.IGNORECASE | regex.MULTILINE),
        ("re.I", regex.IGNORECASE),
    ],
)
def test_parse_flags(flags: object, value: int) -> None:
    assert parse_flags(flags) == value


def test_unknown_flag() -> None:
    with pytest.raises(ValueError, match="unknown regex flag 'X'"):
        parse_flags("X")


def test_compile_and_search() -> None:
    assert search(compile_pattern("^ab", regex.IGNORECASE), "ABc") is not None
    with pytest.raises(ValueError, match="invalid regular expression"):
        compile_pattern("(")
    with pytest.raises(ValueError, match="must be a string"):
        compile_pattern(3)  # type: ignore[arg-type]


def test_catastrophic_backtracking_times_out() -> None:
    with pytest.raises(RegexTimeout, match="timed out"):
        search(compile_pattern(r"(\w+\s?)+$"), "a" * 5000 + "!")


def test_flag_values_are_those_of_the_regex_module() -> None:
    from lvegit.checkers import safe_regex

    for name in ("ASCII", "IGNORECASE", "LOCALE", "MULTILINE", "DOTALL"):
        assert getattr(safe_regex, name) == getattr(regex, name), name
