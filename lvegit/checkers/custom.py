"""Custom checkers from an LVE's `checker/checker*.py`.

Validation reads them as syntax trees only (nothing contributed runs). Loading imports each file by path
under a module name unique to its LVE, so equal class names in different LVEs never collide, and while
loading, the older lve-tools imports (`lve.checkers.base`, `lve.prompt`, ...) resolve to lvegit's classes.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib.util
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from lvegit.base.errors import CheckerError, CheckerUnavailable
from lvegit.base.files import FileProblem, ensure_inside, read_text
from lvegit.checkers import base, core, model_based
from lvegit.checkers.safe_lambda import UNPARSEABLE
from lvegit.lve.prompt import Message, Role
from lvegit.lve.repo import CHECKER_DIR

MAX_CHECKER_BYTES = 512 * 1024


@dataclass(frozen=True)
class CustomClass:
    """What validation needs to know about a custom checker class, read from its syntax tree."""

    name: str
    file: Path
    line: int
    required: tuple[str, ...]
    optional: tuple[str, ...]
    takes_any: bool  # **kwargs, or an __init__ inherited from a class we cannot see
    bases: tuple[str, ...]
    docstring: str


def checker_files(lve_dir: Path) -> list[Path]:
    """The LVE's checker/checker*.py files (every such name that is not a folder: reading a link or a
    device says what is wrong with it); a FileProblem when the folder leads out of the LVE."""
    folder = lve_dir / CHECKER_DIR
    if not folder.is_dir():
        return []
    ensure_inside(lve_dir, folder)
    return sorted(p for p in folder.glob("checker*.py") if p.is_symlink() or not p.is_dir())


def _base_names(node: ast.ClassDef) -> tuple[str, ...]:
    return tuple(
        b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else "?"
        for b in node.bases
    )


def _init_signature(node: ast.ClassDef) -> tuple[tuple[str, ...], tuple[str, ...], bool]:
    for item in node.body:
        if isinstance(item, ast.FunctionDef) and item.name == "__init__":
            args = item.args
            positional = [a.arg for a in (*args.posonlyargs, *args.args)][1:]  # drop self
            n_required = len(positional) - len(args.defaults)
            required = positional[:n_required]
            optional = positional[n_required:]
            for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
                (optional if default is not None else required).append(arg.arg)
            return tuple(required), tuple(optional), args.kwarg is not None
    if set(_base_names(node)) <= {"BaseChecker", "MultiRunBaseChecker"}:
        return (), ("prompt_contains_responses", "get_variables", "get_response"), False
    return (), (), True


def read_custom_classes(lve_dir: Path) -> dict[str, CustomClass]:
    """Top-level classes of the LVE's checker files, by name; FileProblem names a broken file and line."""
    classes: dict[str, CustomClass] = {}
    for path in checker_files(lve_dir):
        text = read_text(path, MAX_CHECKER_BYTES, within=lve_dir)
        try:
            tree = ast.parse(text, filename=path.name)
        except SyntaxError as exc:
            raise FileProblem(f"{path.name}: syntax error: {exc.msg}", exc.lineno, exc.offset) from None
        except UNPARSEABLE:
            raise FileProblem(f"{path.name}: cannot be parsed (nested too deeply, or null bytes)") from None
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                required, optional, takes_any = _init_signature(node)
                classes[node.name] = CustomClass(
                    node.name,
                    path,
                    node.lineno,
                    required,
                    optional,
                    takes_any,
                    _base_names(node),
                    ast.get_docstring(node) or "",
                )
    return classes


def _ensure_installed(module: str, *_args: object, **_kwargs: object) -> None:
    if importlib.util.find_spec(module) is None:
        raise CheckerUnavailable(
            f"this checker needs the Python package '{module}', which is not installed", module
        )


def _compat_modules() -> dict[str, types.ModuleType]:
    """The lve-tools module layout that older checkers import from, filled with lvegit's objects."""
    checker_classes = {
        name: getattr(module, name)
        for module in (core, model_based)
        for name in dir(module)
        if isinstance(getattr(module, name), type) and issubclass(getattr(module, name), base.BaseChecker)
    }
    shared = {
        "BaseChecker": base.BaseChecker,
        "MultiRunBaseChecker": base.MultiRunBaseChecker,
        **checker_classes,
    }
    contents: dict[str, dict[str, object]] = {
        "lve": {},
        "lve.checkers": shared,
        "lve.checkers.base": shared,
        "lve.checkers.match": shared,
        "lve.checkers.consistency": shared,
        "lve.prompt": {"Role": Role, "Message": Message},
        "lve.utils": {},
        "lve.utils.importutils": {"ensure_installed": _ensure_installed},
    }
    modules = {}
    for name, attributes in contents.items():
        module = types.ModuleType(name)
        module.__dict__.update(attributes)
        module.__path__ = []  # a package, so that submodule imports resolve from sys.modules
        modules[name] = module
    return modules


@contextlib.contextmanager
def _lve_compat() -> Iterator[None]:
    modules = _compat_modules()
    saved = {name: sys.modules.get(name) for name in modules}
    sys.modules.update(modules)
    try:
        yield
    finally:
        for name, previous in saved.items():
            if previous is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = previous


def module_name(lve_dir: Path, file_name: str, source: str) -> str:
    """Unique per LVE and per file content, so an edited checker is never served from a stale module."""
    key = f"{lve_dir.resolve()}\0{file_name}\0{source}".encode()
    return f"lvegit_custom_{hashlib.sha256(key).hexdigest()[:16]}_{Path(file_name).stem}"


def read_checker_sources(lve_dir: Path) -> dict[str, str]:
    """The text of every checker*.py of the LVE, by file name."""
    try:
        return {
            path.name: read_text(path, MAX_CHECKER_BYTES, within=lve_dir) for path in checker_files(lve_dir)
        }
    except FileProblem as exc:
        raise CheckerError(f"{CHECKER_DIR}: {exc}") from None


def _execute(name: str, path: Path, source: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__file__ = str(path)
    try:
        with _lve_compat():
            exec(compile(source, str(path), "exec"), module.__dict__)
    except (CheckerUnavailable, MemoryError):  # the worker names the limit a MemoryError means
        raise
    except ModuleNotFoundError as exc:  # lve-tools shipped openai, requests, ...; lvegit may not
        raise CheckerUnavailable(
            f"{CHECKER_DIR}/{path.name} imports '{exc.name}', which is not installed", exc.name
        ) from None
    except (Exception, SystemExit) as exc:  # contributed code must not end the run
        raise CheckerError(
            f"{CHECKER_DIR}/{path.name} failed to import: {type(exc).__name__}: {exc}"
        ) from None
    return module


def load_custom_checker(
    lve_dir: Path, class_name: str, sources: dict[str, str] | None = None
) -> type[base.BaseChecker]:
    """Execute the LVE's checker files (given as `sources`, or read now) and return `class_name`.

    Only the sandbox worker calls this: it is where contributed code runs.
    """
    found: type[base.BaseChecker] | None = None
    for file_name, source in sorted((read_checker_sources(lve_dir) if sources is None else sources).items()):
        name = module_name(lve_dir, file_name, source)
        module = sys.modules.get(name)
        if module is None:
            module = _execute(name, lve_dir / CHECKER_DIR / file_name, source)
            sys.modules[name] = module
        candidate = getattr(module, class_name, None)
        if isinstance(candidate, type) and issubclass(candidate, base.BaseChecker):
            found = candidate
    if found is None:
        raise CheckerError(
            f"no checker class '{class_name}' (a BaseChecker subclass) in {CHECKER_DIR}/checker*.py"
        )
    return found
