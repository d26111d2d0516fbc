from __future__ import annotations

import pytest

from lvegit.base.errors import RegexTimeout, UnsafeExpressionError
from lvegit.checkers.safe_lambda import compile_lambda


@pytest.mark.parametrize(
    ("source", "args", "expected"),
    [
        ("lambda r, a, b: int(r) == int(a) + int(b)", ("15", 12, "3"), True),
        ("lambda rs, a, b: all(int(r) == int(a) + int(b) for r in rs)", (["4", "5"], 3, 1), False),
        ("lambda r: len(set(x.lower() for x in r.split())) == 2", ("A a b",), True),
        ("lambda r: [w for w in r.split() if w.isdigit()] == ['1', '2']", ("x 1 y 2",), True),
        ("lambda r: {k: v for k, v in [('a', 1)]}.get('a') == 1", ("",), True),
        ("lambda r: f'{r!r:>5}' == \"  'x'\"", ("x",), True),
        ("lambda r: re.search(r'\\d+', r).group(0) == '42'", ("answer 42",), True),
        ("lambda r: re.fullmatch('[a-z]+', r, re.I) is not None", ("ABC",), True),
        ("lambda r: sorted(r, key=lambda c: c if True else -1)[0] == 'a'", ("cab",), True),
        ("lambda r: abs(round(float(r), 1) - 0.3) < 1e-9 and not r.startswith('-')", ("0.30",), True),
        ("lambda r, n=2: r * n == 'abab' and 2 ** 10 == 1024", ("ab",), True),
        ("lambda r, n=-1.5, *, s='x', z=None: (n, s, z) == (-1.5, 'x', None)", ("ab",), True),
        ("lambda r: max(map(len, r.split(','))) if r else 0", ("a,bcd",), 3),
        ("lambda r: r[1:-1].strip().upper() in ('B', 'C')", ("[b]",), True),
        ("lambda *rs, **kw: len(rs) + len(kw)", (1, 2), 2),
        ("lambda r: isinstance(r, str) and sum(1 for c in []) == 0", ("s",), True),
    ],
)
def test_what_real_lves_write_is_allowed(source: str, args: tuple, expected: object) -> None:
    assert compile_lambda(source)(*args) == expected


@pytest.mark.parametrize(
    ("source", "complaint"),
    [
        ("lambda r: __import__('os').system('id')", "name '__import__' is not a lambda parameter"),
        ("lambda r: ().__class__.__bases__[0].__subclasses__()", "attribute '__class__' is not allowed"),
        ("lambda r: r.__class__", "attribute '__class__' is not allowed"),
        ("lambda r: eval('1')", "name 'eval' is not a lambda parameter"),
        ("lambda r: exec('1')", "name 'exec' is not a lambda parameter"),
        ("lambda r: open('/etc/passwd').read()", "name 'open' is not a lambda parameter"),
        ("lambda r: getattr(r, '__class__')", "name 'getattr' is not a lambda parameter"),
        ("lambda r: globals()", "name 'globals' is not a lambda parameter"),
        ("lambda r: type(r)", "name 'type' is not a lambda parameter"),
        ("lambda r: r.format(r)", "attribute 'format' is not allowed"),
        ("lambda r: '{0.__class__}'.format_map(r)", "attribute 'format_map' is not allowed"),
        ("lambda r: (x := 1)", "NamedExpr is not allowed"),
        ("lambda r: [y for y in r].gi_frame", "attribute 'gi_frame' is not allowed"),
        ("lambda _r: _r", "names starting with '_' are not allowed"),
        ("lambda r: b'bytes'", "only numbers, strings, booleans and None"),
        ("lambda r: await r", "Await is not allowed"),
        ("lambda r: (yield r)", "Yield is not allowed"),
        ("import os", "not valid Python"),
        ("r == 1", "must be a lambda expression"),
        ("lambda r: re.compile('x').pattern", "attribute 'compile' is not allowed"),
        ("lambda r: re.search('x', r).re", "attribute 're' is not allowed"),
        ("lambda r: unknown_name", "name 'unknown_name' is not a lambda parameter"),
    ],
)
def test_escapes_are_rejected_with_the_construct(source: str, complaint: str) -> None:
    with pytest.raises(UnsafeExpressionError, match=complaint.replace("(", r"\(").replace(")", r"\)")):
        compile_lambda(source)


def test_error_names_column() -> None:
    with pytest.raises(UnsafeExpressionError, match=r"'__import__' at column 11"):
        compile_lambda("lambda r: __import__('os')")


def test_non_string_and_oversized_sources() -> None:
    with pytest.raises(UnsafeExpressionError, match="not int"):
        compile_lambda(3)  # type: ignore[arg-type]
    with pytest.raises(UnsafeExpressionError, match="longer than"):
        compile_lambda("lambda r: " + "1 + " * 5000 + "1")


@pytest.mark.parametrize(
    "body", ["-" * 900 + "1", "not " * 2000 + "r", "r+" * 4000 + "r", "-" * 3000 + "1", "[" * 150 + "]" * 150]
)
def test_deeply_nested_lambdas_are_refused_not_crashed_on(body: str) -> None:
    """Deep trees overflow the parser, or the checks that walk the tree: a refusal either way (was exit 3)."""
    try:
        assert compile_lambda("lambda r: " + body) is not None  # shallow enough for this stack
    except UnsafeExpressionError as refused:
        assert str(refused) in ("nested too deeply to check", "not a parseable expression")


def test_resource_guards() -> None:
    with pytest.raises(ValueError, match="exponent"):
        compile_lambda("lambda r: 10 ** 10 ** 10")("")
    with pytest.raises(ValueError, match="repeating a sequence"):
        compile_lambda("lambda r: 'x' * 10 ** 9")("")
    assert compile_lambda("lambda r: 3 * 4")("") == 12


OVER_BUDGET = "more work than one verdict may"
# Each would run for hours or fill the memory: the work is counted before it is done, or the size refused
# before it is built.
ENDLESS = [
    ("lambda r: len([0 for i in range(10**5) for j in range(10**5)])", OVER_BUDGET),  # Python loops
    ("lambda r: sum(range(10**12))", OVER_BUDGET),  # a loop in C
    ("lambda r: sorted(range(10**9))[0]", OVER_BUDGET),
    ("lambda r: sum(len(r[:]) for i in range(10**6))", OVER_BUDGET),  # copies
    ("lambda r: sum(r in r for i in range(10**6))", OVER_BUDGET),  # comparisons that read
    ("lambda r: sum(r.count('x') for i in range(10**6))", OVER_BUDGET),  # methods that read
    ("lambda r: max(r, key=lambda c: r.count(c))", OVER_BUDGET),  # a nested lambda's calls
    ("lambda r: len(r.replace('', r).replace('', r))", OVER_BUDGET),  # methods that build
    ("lambda r: len(''.join(r for i in range(10**6)))", OVER_BUDGET),
    ("lambda r: len(r.center(10**10))", OVER_BUDGET),
    ("lambda r: len(('\t' + r).expandtabs(10**9))", OVER_BUDGET),
    ("lambda r: len([r + r for i in range(10**6)])", OVER_BUDGET),
    ("lambda r: len({i: r[:] for i in range(10**6)})", OVER_BUDGET),
    ("lambda r: (10**10000) ** 10000", "a power of more than"),
    ("lambda r: [y * z for x in [10**9000] for y in [x**19] for z in [x**17]]", "a product of more than"),
    (  # long division: each takes time in the product of the numbers' sizes
        "lambda r: [y // x for x in [10**9000] for y in [x*x*x*x*x*x*x*x] for i in range(1000)]",
        OVER_BUDGET,
    ),
    ("lambda r: '%*s' % (10**9, r)", "a width taken from the arguments"),
    ("lambda r: '%9999999999s' % r", "a width of 9999999999"),
]


@pytest.mark.parametrize(("source", "complaint"), ENDLESS)
def test_a_lambda_without_end_is_stopped_by_its_budget(source: str, complaint: str) -> None:
    with pytest.raises(ValueError, match=complaint):
        compile_lambda(source)("x" * 100_000)


def test_the_budget_is_per_verdict() -> None:
    function = compile_lambda("lambda r: sum(1 for c in r) == len(r)")
    for _ in range(3):  # each more than a third of one verdict's budget
        assert function("x" * 400_000)


@pytest.mark.parametrize(
    ("source", "complaint"),
    [
        ("lambda r: f'{r:>10000000000}'", "a format width of more than six digits"),
        ("lambda r, n: f'{r:>{n}}'", "a format spec must be written out, not computed"),
        ("lambda r, x=1/0: x", "a default value must be written out"),
        ("lambda r, *, x=[1]: x", "a default value must be written out"),
        ("lambda r: sorted(r, key=lambda c, n=len(r): n)", "a default value must be written out"),
        ("lambda r, x=-'a': x", "a default value must be written out"),
    ],
)
def test_what_cannot_be_bounded_as_it_runs_is_refused_when_compiled(source: str, complaint: str) -> None:
    with pytest.raises(UnsafeExpressionError, match=complaint):
        compile_lambda(source)


@pytest.mark.parametrize(
    "default", ["9**9**9", "sum(range(10**12))", "[0 for i in range(10**6) for j in range(10**6)]"]
)
def test_validation_computes_no_default(default: str) -> None:
    """A default is made when the function is: at validation, outside every verdict and its limits. Had it
    been computed, this would not end (9**9**9 is a third of a gigabyte of digits in C)."""
    with pytest.raises(UnsafeExpressionError, match="default value must be written out"):
        compile_lambda(f"lambda r, x={default}: x")


def test_work_in_the_budget_is_judged_as_before() -> None:
    big = "word " * 200_000  # a 1 MB response
    function = compile_lambda(
        "lambda r: 'sorry' not in r.lower() and len(r.split()) > 10 and r[:4] == 'word'"
    )
    assert function(big)
    assert compile_lambda("lambda r: f'{float(r):.2f}' == '1.23' and '%5s' % 'a' == '    a'")("1.234")


def test_regex_in_lambdas_has_a_timeout() -> None:
    function = compile_lambda("lambda r: re.search('(a|aa)+$', r) is None")
    with pytest.raises(RegexTimeout, match="timed out"):
        function("a" * 5000 + "!")
