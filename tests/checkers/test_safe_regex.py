from __future__ import annotations

import pytest
import regex

from lvegit.base.errors import InvalidValue, RegexTimeout
from lvegit.checkers.safe_regex import compile_pattern, parse_flags, regex_namespace, search, unrolled_size


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


@pytest.mark.parametrize(
    "pattern",
    [
        "(?:x{3000}){3000}",  # 2.4 GB and seconds to compile, before any time limit applied
        "x{1000000}",
        "((ab){1000}c){1000}",
        r"(?:\p{L}{500}){500}",
    ],
)
def test_a_pattern_that_expands_past_the_bound_is_refused_before_it_is_compiled(pattern: str) -> None:
    with pytest.raises(InvalidValue, match="repeats too much"):
        compile_pattern(pattern)
    with pytest.raises(InvalidValue, match="repeats too much"):  # also as a lambda calls re
        regex_namespace().search(pattern, "x")


@pytest.mark.parametrize(
    ("pattern", "size"),
    [
        (r"\d{3}-\d{3}-\d{4}", 12),
        ("[a-z]{1,60}", 60),
        ("[]{]{5}", 5),  # a brace in a class is no count
        ("x{e<=1}", 7),  # the regex module's fuzzy match: no count
        ("((ab){3}c){2}", 14),
        (r"\p{Lu}{2}", 2),
    ],
)
def test_what_real_patterns_expand_to(pattern: str, size: int) -> None:
    assert unrolled_size(pattern) == size
    compile_pattern(pattern)
