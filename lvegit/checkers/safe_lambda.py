"""Lambda strings from test.json, compiled through an AST allow-list instead of being eval'ed as written.

Real LVEs write small predicates such as `lambda r, a, b: int(r) == int(a) + int(b)`. The allow-list admits
expressions, comprehensions, f-strings, safe builtins, public methods of strings, lists, dicts and regex
matches, and the `re` functions; everything else (imports, dunder attributes, eval/exec/open/getattr,
names that are not parameters or allowed builtins) is rejected with the construct and its column.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from lvegit.base.errors import UnsafeExpressionError
from lvegit.checkers import lambda_work
from lvegit.checkers.safe_regex import LAMBDA_FLAGS, REGEX_FUNCTIONS, regex_namespace

MAX_LAMBDA_CHARS = 10_000
# What ast.parse raises besides SyntaxError on hostile text: null bytes, nesting too deep for the parser
# (RecursionError, MemoryError) and, on CPython 3.11, SystemError "AST constructor recursion depth
# mismatch" for nesting that crosses its recursion guard (seen under load, not reproducible at will).
UNPARSEABLE: Final = (ValueError, RecursionError, MemoryError, SystemError)

SAFE_BUILTINS: dict[str, Any] = {
    f.__name__: f
    for f in (
        abs,
        all,
        any,
        bool,
        dict,
        enumerate,
        filter,
        float,
        int,
        len,
        list,
        map,
        max,
        min,
        range,
        reversed,
        round,
        set,
        sorted,
        str,
        sum,
        tuple,
        zip,
        isinstance,
    )
}

# Public, side-effect-free methods of str, list, dict, set and re.Match (and attributes of the re namespace).
SAFE_ATTRIBUTES = frozenset(
    """
    capitalize casefold center count endswith expandtabs find index isalnum isalpha isascii isdecimal isdigit
    isidentifier islower isnumeric isprintable isspace istitle isupper join ljust lower lstrip partition
    removeprefix removesuffix replace rfind rindex rjust rpartition rsplit rstrip split splitlines startswith
    strip swapcase title upper zfill get keys values items copy union intersection difference issubset
    issuperset group groups groupdict start end span string
    """.split()
) | frozenset((*REGEX_FUNCTIONS, *LAMBDA_FLAGS))

_ALLOWED_NODES: tuple[type[ast.AST], ...] = (
    ast.Expression,
    ast.Lambda,
    ast.arguments,
    ast.arg,
    ast.BoolOp,
    ast.And,
    ast.Or,
    ast.BinOp,
    ast.Add,
    ast.Sub,
    ast.Mult,
    ast.Div,
    ast.FloorDiv,
    ast.Mod,
    ast.Pow,
    ast.UnaryOp,
    ast.Not,
    ast.USub,
    ast.UAdd,
    ast.Compare,
    ast.Eq,
    ast.NotEq,
    ast.Lt,
    ast.LtE,
    ast.Gt,
    ast.GtE,
    ast.In,
    ast.NotIn,
    ast.Is,
    ast.IsNot,
    ast.IfExp,
    ast.Call,
    ast.keyword,
    ast.Name,
    ast.Load,
    ast.Store,
    ast.Constant,
    ast.Attribute,
    ast.Subscript,
    ast.Slice,
    ast.List,
    ast.Tuple,
    ast.Set,
    ast.Dict,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
    ast.comprehension,
    ast.JoinedStr,
    ast.FormattedValue,
    ast.Starred,
)


def _describe(node: ast.AST) -> str:
    try:
        return f"'{ast.unparse(node)}'"
    except Exception:  # unparse of a partial node; the type name still says what it is
        return type(node).__name__


# The helpers the guarded tree calls (lambda_work), under names a lambda cannot write (no `_` names).
_HELPERS: dict[str, Any] = {
    "_lvegit_read": lambda_work.read,
    "_lvegit_iterate": lambda_work.iterate,
    "_lvegit_binary": lambda_work.binary,
    "_lvegit_call": lambda_work.call,
}


def _helper(name: str, arguments: list[ast.expr], like: ast.AST) -> ast.Call:
    return ast.copy_location(ast.Call(ast.Name(name, ast.Load()), arguments, []), like)


class _Guard(ast.NodeTransformer):
    """Routes every operation whose cost grows with its operands through lambda_work, which charges it to
    the verdict's budget: a lambda must not hang or exhaust memory."""

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        return _helper("_lvegit_binary", [ast.Constant(type(node.op).__name__), node.left, node.right], node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        call = ast.Call(ast.Name("_lvegit_call", ast.Load()), [node.func, *node.args], node.keywords)
        return ast.copy_location(call, node)

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        node.left = _helper("_lvegit_read", [node.left], node.left)
        node.comparators = [_helper("_lvegit_read", [each], each) for each in node.comparators]
        return node

    def visit_comprehension(self, node: ast.comprehension) -> ast.AST:
        self.generic_visit(node)
        node.iter = _helper("_lvegit_iterate", [node.iter], node.iter)
        return node

    def _built(self, node: ast.AST) -> ast.AST:
        """A value built from others (a slice, a display, an f-string, a comprehension's item)."""
        self.generic_visit(node)
        if isinstance(getattr(node, "ctx", ast.Load()), ast.Load):
            return _helper("_lvegit_read", [node], node)  # type: ignore[list-item]
        return node  # a comprehension's target: assigned to, not read

    visit_Subscript = visit_List = visit_Tuple = visit_Set = visit_Dict = visit_JoinedStr = _built

    def visit_ListComp(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp) -> ast.AST:
        self.generic_visit(node)
        node.elt = _helper("_lvegit_read", [node.elt], node.elt)
        return node

    visit_SetComp = visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, node: ast.DictComp) -> ast.AST:
        self.generic_visit(node)
        node.key = _helper("_lvegit_read", [node.key], node.key)
        node.value = _helper("_lvegit_read", [node.value], node.value)
        return node


def _written_out(node: ast.expr) -> bool:
    """A constant, or a number with its sign: what a default may be."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        return isinstance(node.operand, ast.Constant) and type(node.operand.value) in (int, float)
    return isinstance(node, ast.Constant)


class _Checker(ast.NodeVisitor):
    def __init__(self) -> None:
        self.bound: set[str] = set()

    def fail(self, node: ast.AST, why: str) -> None:
        column = getattr(node, "col_offset", None)
        where = f" at column {column + 1}" if column is not None else ""
        raise UnsafeExpressionError(f"{_describe(node)}{where}: {why}")

    def generic_visit(self, node: ast.AST) -> None:
        if not isinstance(node, _ALLOWED_NODES):
            self.fail(node, f"{type(node).__name__} is not allowed in a checker lambda")
        super().generic_visit(node)

    def visit_arguments(self, node: ast.arguments) -> None:
        # Defaults are computed when the function is made, at compile time, outside any verdict: validation
        # must not evaluate anything, so only values written out are allowed.
        for default in (*node.defaults, *node.kw_defaults):
            if default is not None and not _written_out(default):
                self.fail(
                    default, "a default value must be written out: a number, a string, True, False or None"
                )
        self.generic_visit(node)

    def visit_arg(self, node: ast.arg) -> None:
        self._bind(node, node.arg)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Store):
            self._bind(node, node.id)
        elif node.id not in self.bound and node.id not in SAFE_BUILTINS and node.id != "re":
            self.fail(node, f"name '{node.id}' is not a lambda parameter or an allowed builtin")

    def _bind(self, node: ast.AST, name: str) -> None:
        if name.startswith("_"):
            self.fail(node, "names starting with '_' are not allowed")
        self.bound.add(name)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self.visit(node.value)  # report the innermost offence first: `__import__` before `.system`
        if node.attr.startswith("_") or node.attr not in SAFE_ATTRIBUTES:
            self.fail(node, f"attribute '{node.attr}' is not allowed")

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.visit(node.args)
        self.visit(node.body)

    def visit_ListComp(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp) -> None:
        # Bind the loop targets before the element expression refers to them.
        for generator in node.generators:
            self.visit(generator)
        self.visit(node.elt)

    visit_SetComp = visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, node: ast.DictComp) -> None:
        for generator in node.generators:
            self.visit(generator)
        self.visit(node.key)
        self.visit(node.value)

    def visit_comprehension(self, node: ast.comprehension) -> None:
        self.visit(node.iter)
        self.visit(node.target)
        for condition in node.ifs:
            self.visit(condition)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, bytes) or node.value is Ellipsis:
            self.fail(node, "only numbers, strings, booleans and None are allowed as constants")

    def visit_FormattedValue(self, node: ast.FormattedValue) -> None:
        # A width is allocated before anything could count it: only written ones, of up to six digits.
        spec = node.format_spec
        if spec is not None:
            parts = spec.values if isinstance(spec, ast.JoinedStr) else [spec]
            if not all(isinstance(part, ast.Constant) for part in parts):
                self.fail(node, "a format spec must be written out, not computed")
            if re.search(r"\d{7,}", "".join(str(part.value) for part in parts)):  # type: ignore[attr-defined]
                self.fail(node, "a format width of more than six digits")
        self.visit(node.value)


@dataclass(frozen=True)
class LambdaArguments:
    """The argument list of a lambda string: what validation needs to know which parameters it reads."""

    positional: tuple[str, ...]  # in order; keyword-only arguments follow them
    keyword_only: tuple[str, ...]
    with_default: frozenset[str]
    any_keyword: bool  # **kwargs: accepts every parameter

    @property
    def names(self) -> tuple[str, ...]:
        return (*self.positional, *self.keyword_only)


def lambda_arguments(source: str) -> LambdaArguments | None:
    """The arguments of a lambda string, or None when it is not one (compile_lambda says why)."""
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except (SyntaxError, *UNPARSEABLE):
        return None
    if not isinstance(tree.body, ast.Lambda):
        return None
    args = tree.body.args
    positional = [*args.posonlyargs, *args.args]
    defaults = positional[len(positional) - len(args.defaults) :] if args.defaults else []
    with_default = {a.arg for a in defaults}
    with_default |= {a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None}
    return LambdaArguments(
        tuple(a.arg for a in positional),
        tuple(a.arg for a in args.kwonlyargs),
        frozenset(with_default),
        args.kwarg is not None,
    )


def compile_lambda(source: str) -> Callable[..., Any]:
    """The function a lambda string denotes, or UnsafeExpressionError naming the offending construct."""
    if not isinstance(source, str):
        raise UnsafeExpressionError(f"must be a lambda written as a string, not {type(source).__name__}")
    if len(source) > MAX_LAMBDA_CHARS:
        raise UnsafeExpressionError(f"lambda is longer than {MAX_LAMBDA_CHARS} characters")
    return _compiled(source)


@functools.lru_cache(maxsize=4096)
def _compiled(source: str) -> Callable[..., Any]:
    """A verified lambda's function, compiled once per text: LVEs of a repository often share one (a
    refusal is raised, not kept, each time)."""
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError as exc:
        raise UnsafeExpressionError(f"not valid Python: {exc.msg} (column {exc.offset})") from None
    except UNPARSEABLE:
        raise UnsafeExpressionError("not a parseable expression") from None
    if not isinstance(tree.body, ast.Lambda):
        raise UnsafeExpressionError(
            f"must be a lambda expression such as 'lambda r: ...', got {_describe(tree.body)}"
        )
    try:  # each step walks the tree recursively: a tree nested deeper than Python's stack is refused
        _Checker().visit(tree)
        guarded = ast.fix_missing_locations(_Guard().visit(tree))
        scope: dict[str, Any] = {"__builtins__": {}, "re": regex_namespace(), **SAFE_BUILTINS, **_HELPERS}
        code = compile(guarded, "<checker lambda>", "eval")
    except UNPARSEABLE:
        raise UnsafeExpressionError("nested too deeply to check") from None
    function = eval(code, scope)  # the verified tree only: makes the function (defaults are constants)
    if not callable(function):  # pragma: no cover - the body is a Lambda by the check above
        raise UnsafeExpressionError("not a function")

    @functools.wraps(function)
    def verdict(*args: Any, **kwargs: Any) -> Any:
        lambda_work.start_verdict()
        return function(*args, **kwargs)

    return verdict
