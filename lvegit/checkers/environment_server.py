"""The worker's side of an LVE's environment (see lvegit.checkers.environment): its code, environment/*.py,
imported as one package from the sources lvegit sent, its tools called on the state of each attempt, its
checks asked. Runs only in a confined checker worker (lvegit.checkers.worker), which reports a failure of
the code as the LVE's error.

A tool is called `function(state, **arguments)`; what it returns is sent as it is when it is text, else
through tools.py's `format_result`, else as JSON. What it raises is its result, `Type: message` (what
AgentDojo sends the model), and the call's error. The state is tools.py's `State` (a pydantic model) built
from the JSON lvegit sends, or that JSON itself; it goes back as JSON.

An attempt's first state is validated by the State model, as its environment loads it. The states a check
sees are rebuilt as the tools left them: each field's value validated by its type, each model constructed
without its model's validators, which may rebuild a collection from its initial list (AgentDojo's calendar
and inbox do) and drop what the agent created.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import random
import sys
import types
from collections.abc import Sequence
from functools import cache
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, TypeAdapter
from pydantic_core import to_jsonable_python

from lvegit.base.errors import CheckerError
from lvegit.lve.environment import CHECKS, CHECKS_MODULE, TOOLS_MODULE

SEED = 0  # `random` starts from it in every attempt, so that a tool that draws from it is repeatable


# What AgentDojo's environments format their results with (yaml.safe_dump), where it is installed: loaded
# once, for every worker forked after.
with contextlib.suppress(ImportError):
    importlib.import_module("yaml")


class _Warm(BaseModel):
    """Built when the launcher loads this module (Launcher.load_environments), once: environments build on
    pydantic models, and a worker forked after it finds pydantic's machinery loaded (loading it was 0.4 s of
    each worker's cold start)."""

    value: list[dict[str, float]]


class _Sources(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the modules of one environment package in the sources lvegit sent (the repository is not in
    the sandbox's view)."""

    def __init__(self, package: str, sources: dict[str, str]) -> None:
        self.package = package
        self.sources = sources

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == self.package:
            return importlib.util.spec_from_loader(fullname, self, is_package=True)
        prefix, _, name = fullname.rpartition(".")
        if prefix == self.package and name in self.sources:
            return importlib.util.spec_from_loader(fullname, self, origin=f"environment/{name}.py")
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        if module.__name__ == self.package:
            return
        name = module.__name__.rpartition(".")[2]
        code = compile(self.sources[name], f"environment/{name}.py", "exec")
        exec(code, module.__dict__)


def _load(sources: dict[str, str]) -> tuple[types.ModuleType, types.ModuleType | None]:
    """The tools module and the checks module (None where there is none) of an environment package named
    by its sources, so that two LVEs' environments never share a module."""
    key = hashlib.sha256(json.dumps(sources, sort_keys=True).encode()).hexdigest()[:16]
    package = f"lvegit_environment_{key}"
    if package not in sys.modules:
        sys.meta_path.insert(0, _Sources(package, sources))
    modules: list[types.ModuleType | None] = []
    for name in (TOOLS_MODULE, CHECKS_MODULE):
        if name not in sources:
            modules.append(None)
            continue
        try:
            modules.append(importlib.import_module(f"{package}.{name}"))
        except MemoryError:
            raise
        except (Exception, SystemExit) as exc:  # contributed code: its failure is the LVE's error
            raise CheckerError(
                f"environment/{name}.py failed to import: {type(exc).__name__}: {exc}"
            ) from None
    tools, checks = modules
    if tools is None:
        raise CheckerError(f"environment/{TOOLS_MODULE}.py is missing")
    return tools, checks


def _jsonable(value: Any, what: str) -> Any:
    """A value as JSON data (pydantic models and what pydantic can turn into JSON too)."""
    try:
        return json.loads(json.dumps(to_jsonable_python(value)))
    except (TypeError, ValueError) as exc:
        raise CheckerError(f"{what} is not JSON data: {exc}") from None


@cache
def _adapter(annotation: Any) -> TypeAdapter[Any]:
    return TypeAdapter(annotation)


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model a field holds: the annotation itself, or the one model of a union with None."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if get_origin(annotation) in (Union, types.UnionType):
        models = [arg for arg in get_args(annotation) if arg is not type(None)]
        if len(models) == 1:
            return _model_in(models[0])
    return None


def rebuilt(annotation: Any, value: Any) -> Any:
    """`value` (JSON data) as a value of `annotation`, its models constructed field by field: a model's
    validators do not run, every field's type does."""
    model = _model_in(annotation)
    if model is not None and isinstance(value, dict):
        fields = {
            name: rebuilt(field.annotation, value[name])
            for name, field in model.model_fields.items()
            if name in value
        }
        return model.model_construct(**fields)
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is list and len(args) == 1 and isinstance(value, list) and _model_in(args[0]):
        return [rebuilt(args[0], item) for item in value]
    if origin is dict and len(args) == 2 and isinstance(value, dict) and _model_in(args[1]):
        keys = _adapter(args[0])
        return {keys.validate_python(key): rebuilt(args[1], item) for key, item in value.items()}
    return _adapter(annotation).validate_python(value)


class Environment:
    """One LVE's environment code and the state of each of its attempts (sessions) in flight."""

    def __init__(self, sources: dict[str, str]) -> None:
        self.tools, self.checks = _load(sources)
        self.state_class = getattr(self.tools, "State", None)
        self.format_result = getattr(self.tools, "format_result", None)
        self.sessions: dict[str, Any] = {}

    def described(self) -> dict[str, Any]:
        """The functions it defines: its tools and its checks."""
        functions = [
            name for name, value in vars(self.tools).items() if isinstance(value, types.FunctionType)
        ]
        checks = [name for name in CHECKS if callable(getattr(self.checks, name, None))]
        return {"functions": functions, "checks": checks}

    def _state(self, data: Any, validated: bool = True) -> Any:
        """A state object built from JSON data (a copy: the caller's data is never changed), validated by
        the State model or, for the checks, rebuilt as the tools left it (see above)."""
        if self.state_class is None:
            return copy.deepcopy(data)
        try:
            if validated:
                return self.state_class.model_validate(data)
            return rebuilt(self.state_class, data)
        except MemoryError:
            raise
        except Exception as exc:
            raise CheckerError(f"the state does not fit environment/tools.py's State: {exc}") from None

    def dump(self, state: Any) -> Any:
        return _jsonable(state, "the state")

    def start(self, session: str, data: Any) -> Any:
        """A new attempt's state; the state as JSON after the State model read it."""
        random.seed(SEED)
        self.sessions[session] = self._state(data)
        return self.dump(self.sessions[session])

    def call(self, session: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        function = getattr(self.tools, name, None)
        if not isinstance(function, types.FunctionType):
            error = f"error: there is no tool named {json.dumps(name)}"
            return {"result": error, "error": error}
        try:
            value = function(self.sessions[session], **arguments)
            if isinstance(value, str):
                return {"result": value, "error": None}
            if self.format_result is not None:
                return {"result": str(self.format_result(value)), "error": None}
            return {"result": json.dumps(_jsonable(value, "the result"), ensure_ascii=False), "error": None}
        except MemoryError:
            raise
        except (Exception, SystemExit) as exc:  # the tool's failure is what the model is answered
            error = f"{type(exc).__name__}: {exc}"
            return {"result": error, "error": error}

    def end(self, session: str) -> Any:
        """The state after the attempt's last call, as JSON; the session is let go."""
        return self.dump(self.sessions.pop(session))

    def check(self, name: str, output: str | None, before: Any, after: Any, calls: list[Any]) -> bool | None:
        """A check's answer: True, False, or None (cannot judge)."""
        check = getattr(self.checks, name, None)
        if not callable(check):
            raise CheckerError(f"environment/{CHECKS_MODULE}.py defines no function {name}")
        try:
            value = check(output, self._state(before, False), self._state(after, False), copy.deepcopy(calls))
        except MemoryError:
            raise
        except (Exception, SystemExit) as exc:
            failed = f"{type(exc).__name__}: {exc}"
            raise CheckerError(f"environment/{CHECKS_MODULE}.py: {name} failed: {failed}") from None
        if value is not None and not isinstance(value, bool):
            raise CheckerError(
                f"environment/{CHECKS_MODULE}.py: {name} returned {type(value).__name__}, not True, False "
                "or None"
            )
        return value
