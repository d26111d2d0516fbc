"""Checker registry: core and model-based checkers by class name, custom ones from the LVE's checker/."""

from __future__ import annotations

import functools
import inspect
import json
import re
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lvegit.base.errors import CheckerError, CheckerUnavailable, LvegitError
from lvegit.checkers.base import BaseChecker, CheckerNeeds, MultiRunBaseChecker
from lvegit.checkers.core import (
    EnvironmentChecker,
    ExactMatchChecker,
    FuzzyMatchChecker,
    LambdaChecker,
    MonotonicityChecker,
    MultiRunLambdaChecker,
    NumberChecker,
    RefuseChecker,
    RegexChecker,
    ToolCallChecker,
)
from lvegit.checkers.llm_judge import LLMJudgeChecker
from lvegit.checkers.model_based import MODEL_CHECKERS
from lvegit.lve.template import TemplateError, fill, placeholders

if TYPE_CHECKING:
    from lvegit.checkers.environment import EnvironmentWorker
    from lvegit.checkers.sandbox import CheckerWorker, SandboxSettings
    from lvegit.lve.spec import LVE

CORE_CHECKERS: dict[str, type[BaseChecker]] = {
    cls.__name__: cls
    for cls in (
        LambdaChecker,
        NumberChecker,
        RegexChecker,
        MultiRunLambdaChecker,
        MonotonicityChecker,
        ExactMatchChecker,
        FuzzyMatchChecker,
        RefuseChecker,
        ToolCallChecker,
        EnvironmentChecker,
        LLMJudgeChecker,
    )
}
BUILTIN_CHECKERS = {**CORE_CHECKERS, **MODEL_CHECKERS}
BUILTIN_NAMES: tuple[str, ...] = tuple(BUILTIN_CHECKERS)  # lvegit's own checkers, core ones first
SCAFFOLD_CHECKER = LambdaChecker.__name__  # what `lvegit new` scaffolds unless told
# The arguments (as JSON) of the checkers an LVE's factory keeps built, all together: each instance may
# fill a text argument to 4 MiB, and ten thousand instances would keep 40 GB. The oldest built goes first.
MAX_BUILT_BYTES = 64 * 1024 * 1024


def builtin_checker(checker_name: str) -> type[BaseChecker] | None:
    """The class of one of lvegit's own checkers; None for any other name (a custom checker's)."""
    return BUILTIN_CHECKERS.get(checker_name)


def needs_of(checker_name: str) -> CheckerNeeds:
    """What the checker of this name needs (see CheckerNeeds): as its class declares for lvegit's own, a
    custom checker's (contributed code, in the sandbox) for any other name."""
    cls = BUILTIN_CHECKERS.get(checker_name, BaseChecker)
    return cls.needs


@dataclass(frozen=True)
class Signature:
    """The constructor arguments of a checker class."""

    required: tuple[str, ...]
    optional: tuple[str, ...]
    takes_any: bool


@functools.cache
def builtin_signature(checker_name: str) -> Signature:
    """The constructor arguments of one of lvegit's own checkers, read once per process."""
    required, optional, takes_any = [], [], False
    for name, parameter in constructor_signature(checker_name).parameters.items():
        if name == "self" or parameter.kind == parameter.VAR_POSITIONAL:
            continue
        if parameter.kind == parameter.VAR_KEYWORD:
            takes_any = True
        elif parameter.default is parameter.empty:
            required.append(name)
        else:
            optional.append(name)
    return Signature(tuple(required), tuple(optional), takes_any)


@functools.cache
def constructor_signature(checker_name: str) -> inspect.Signature:
    return inspect.signature(BUILTIN_CHECKERS[checker_name])


def filled_by_instances(checker_name: str, argument: str) -> bool:
    """Whether an instance's args fill this checker argument's `{name}` fields (see BaseChecker.text_args):
    every string argument of a custom checker, only text and pattern arguments of lvegit's own."""
    cls = BUILTIN_CHECKERS.get(checker_name)
    return cls is None or argument in cls.text_args or argument in cls.pattern_args


def not_filled_reason(checker_name: str, argument: str, field: str) -> str:
    """Why `{field}` in a checker argument that no instance fills is an error."""
    cls = BUILTIN_CHECKERS.get(checker_name)
    if cls is not None and argument in cls.parameter_lambdas:
        return (
            f"{{{field}}}: a lambda's source is never filled from an instance's args (an instance line would "
            f"rewrite the code); take the parameter as an argument instead, e.g. lambda r, {field}: ... "
            "(write '{{' and '}}' for literal braces)"
        )
    return (
        f"{{{field}}}: this argument is taken as written, never filled from an instance's args "
        "(write '{{' and '}}' for literal braces)"
    )


def substitute_args(lve: LVE, instance_args: dict[str, Any]) -> dict[str, Any]:
    """Checker arguments as the checker is built with them for an instance: text arguments filled from the
    instance's args as lve-tools does, pattern arguments filled escaped (a parameter matches literally);
    anything else, lambda source included, only with `{{` and `}}` made single braces."""
    result = {}
    cls = BUILTIN_CHECKERS.get(lve.checker_name)
    for name, value in lve.checker_args.items():
        if isinstance(value, str) and (cls is None or name not in cls.template_args):
            escape = re.escape if cls is not None and name in cls.pattern_args else None
            try:
                if filled_by_instances(lve.checker_name, name):
                    value = fill(value, instance_args, escape)
                elif fields := placeholders(value):
                    raise TemplateError(not_filled_reason(lve.checker_name, name, fields[0]))
                else:
                    value = fill(value, {})
            except TemplateError as exc:
                raise CheckerError(f"{lve.test_file}: checker_args.{name}: {exc}") from None
        result[name] = value
    return result


def is_multi_run_checker(cls: type[BaseChecker]) -> bool:
    return issubclass(cls, MultiRunBaseChecker)


class CheckerFactory:
    """Builds an LVE's checker once per distinct set of (substituted) arguments, not once per instance.

    Core and model-based checkers are lvegit's own code and run in this process. A custom checker runs in a
    confined worker process (lvegit.checkers.sandbox), started on first use and stopped by `close`.
    """

    def __init__(self, lve: LVE, sandbox: SandboxSettings | None = None) -> None:
        self.lve = lve
        self.sandbox = sandbox
        self._built: OrderedDict[str, BaseChecker] = OrderedDict()
        self._built_bytes = 0  # the length of the keys of _built (ASCII JSON: bytes)
        # Only arguments that instances fill, with a {field}, can differ between them ({{ is a literal brace).
        self._depends_on_args = any(
            isinstance(value, str)
            and "{" in value.replace("{{", "")
            and filled_by_instances(lve.checker_name, name)
            for name, value in lve.checker_args.items()
        )
        self._shared: BaseChecker | None = None  # where it does not depend on them, the checker once built
        self._worker: CheckerWorker | None = None
        self._environment: EnvironmentWorker | None = None
        self._hub_models: list[str] = []

    @property
    def environment(self) -> EnvironmentWorker:
        """The LVE's environment (its code in a sandboxed worker of its own, started on first use)."""
        if self._environment is None:
            from lvegit.checkers.environment import EnvironmentWorker  # starts processes: only when needed

            self._environment = EnvironmentWorker(self.lve, self.sandbox)
        return self._environment

    @property
    def hub_models(self) -> list[str]:
        """The hub models a custom checker asked for (in its sandbox) so far."""
        return self._worker.hub_models if self._worker is not None else self._hub_models

    def __enter__(self) -> CheckerFactory:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        if self._environment is not None:
            self._environment.close()
            self._environment = None
        if self._worker is not None:
            self._hub_models = self._worker.hub_models
            self._worker.close()
            self._worker = None

    def for_args(self, instance_args: dict[str, Any]) -> BaseChecker:
        if not self._depends_on_args:  # the same checker for every instance: its arguments filled once
            if self._shared is None:
                self._shared = self._built_for(substitute_args(self.lve, {}))
            return self._shared
        return self._built_for(substitute_args(self.lve, instance_args))

    def _built_for(self, args: dict[str, Any]) -> BaseChecker:
        key = json.dumps(args, sort_keys=True, default=repr)
        checker = self._built.get(key)
        if checker is None:
            checker = self._built[key] = self._build(args)
            self._built_bytes += len(key)
            while self._built_bytes > MAX_BUILT_BYTES and len(self._built) > 1:
                dropped, _checker = self._built.popitem(last=False)
                self._built_bytes -= len(dropped)
        return checker

    def _build(self, args: dict[str, Any]) -> BaseChecker:
        name = self.lve.checker_name
        if name not in BUILTIN_CHECKERS:
            if self._worker is None:
                from lvegit.checkers.sandbox import CheckerWorker  # starts processes: only when needed

                self._worker = CheckerWorker(self.lve.rel, self.lve.dir, self.sandbox)
            return self._worker.build(name, args)
        cls = BUILTIN_CHECKERS[name]
        try:
            constructor_signature(name).bind(**args)
        except TypeError as exc:  # an argument missing or unknown: the LVE's to fix
            raise CheckerError(f"{self.lve.test_file}: checker_args: {name}: {exc}") from None
        try:
            return cls(**args)
        except CheckerUnavailable:
            raise
        except LvegitError as exc:  # messages written for the user
            detail = str(exc)
        except Exception as exc:  # not the LVE's fault: say so, and how it failed
            detail = f"lvegit's {name} failed unexpectedly (please report it): {type(exc).__name__}: {exc}"
        raise CheckerError(f"{self.lve.test_file}: checker_args: {name}: {detail}")
