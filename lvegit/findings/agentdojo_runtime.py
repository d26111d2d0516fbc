"""What an imported AgentDojo LVE runs in place of the agentdojo package: this file is copied, as it is, into
each LVE's environment/ folder as `runtime.py` by `lvegit import agentdojo`, and runs only there, in lvegit's
sandbox (lvegit never imports it). AgentDojo's own tools, environments and tasks, copied beside it, import
from it what they imported from agentdojo.functions_runtime and agentdojo.task_suite (whose modules pull
in every LLM client AgentDojo supports).

It does what AgentDojo 0.1.35 does when an agent calls a tool (ToolsExecutor and FunctionsRuntime: string
lists read as lists, the arguments validated by a pydantic model of the function's signature, the
environment's part passed in, the result formatted as YAML) and when it checks a run (TaskSuite: the
check from the call trace where a task has one, else from the environment before and after). Its clock
(`now`) is what the copied tools read where AgentDojo's read datetime.datetime.now(): a fixed time, so that
every run and replay answers alike. The parts marked "AgentDojo's" are copied from agentdojo 0.1.35:

MIT License

Copyright (c) 2024 Edoardo Debenedetti, Jie Zhang, Mislav Balunovic, Luca Beurer-Kellner, Marc Fischer, and
Florian Tramèr

Permission is hereby granted, free of charge, to any person obtaining a copy of this software and associated
documentation files (the "Software"), to deal in the Software without restriction, including without
limitation the rights to use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies of the
Software, and to permit persons to whom the Software is furnished to do so, subject to the following
conditions:

The above copyright notice and this permission notice shall be included in all copies or substantial
portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT NOT
LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO
EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN
AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE
OR OTHER DEALINGS IN THE SOFTWARE.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime
import functools
import inspect
from ast import literal_eval
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any, Generic, TypeVar, get_origin, get_type_hints

import yaml
from pydantic import BaseModel, Field, create_model

Version = tuple[int, int, int]
T = TypeVar("T")
Env = TypeVar("Env")


_CLOCK: list[datetime.datetime] = []


def set_clock(when: str) -> None:
    """Fixes the time the tools read (tools.py sets the LVE's)."""
    _CLOCK[:] = [datetime.datetime.fromisoformat(when)]


def now() -> datetime.datetime:
    """What AgentDojo's tools read as datetime.datetime.now(): the LVE's clock, so that a tool that stamps
    the time (an e-mail sent, a file changed) answers the same in every run and replay."""
    if not _CLOCK:
        raise RuntimeError("the environment's tools.py sets no clock (runtime.set_clock)")
    return _CLOCK[0]


class TaskEnvironment(BaseModel):
    """AgentDojo's base of a suite's environment (the LVE's State)."""


class EmptyEnv(TaskEnvironment):
    pass


@dataclasses.dataclass(frozen=True)
class Depends:
    """AgentDojo's: the part of the environment a tool's parameter receives."""

    env_dependency: str | Callable[[BaseModel], BaseModel]

    def extract_dep_from_env(self, env: BaseModel) -> Any:
        if callable(self.env_dependency):
            return self.env_dependency(env)
        return getattr(env, self.env_dependency)


class FunctionCall(BaseModel):
    """AgentDojo's: a call of the agent, as its checks read the trace (`function`, `args`)."""

    function: str
    args: dict[str, Any]
    id: str | None = None
    placeholder_args: dict[str, Any] | None = None


def make_function(function: Callable[..., Any]) -> Callable[..., Any]:
    """A suite's tool list holds the functions themselves: lvegit declares their schemas in test.json."""
    return function


def _is_string_list(text: str) -> bool:
    """AgentDojo's (ToolsExecutor): whether a string argument is a Python list literal."""
    try:
        return isinstance(literal_eval(text), list)
    except (ValueError, SyntaxError):
        return False


def _lists_read(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments as AgentDojo's ToolsExecutor passes them on: a string that is a list literal, a list."""
    return {
        name: literal_eval(value) if isinstance(value, str) and _is_string_list(value) else value
        for name, value in arguments.items()
    }


@functools.cache
def _dependencies(function: Callable[..., Any]) -> dict[str, Depends]:
    hints = get_type_hints(function, include_extras=True)
    return {
        name: hint.__metadata__[0]
        for name, hint in hints.items()
        if get_origin(hint) is Annotated and isinstance(hint.__metadata__[0], Depends)
    }


@functools.cache  # a tool's model is built once per worker, not at every call
def _arguments_model(function: Callable[..., Any]) -> type[BaseModel]:
    """AgentDojo's input schema of a tool (make_function): a pydantic model of its parameters that are not
    the environment's, named as AgentDojo names it (the name appears in a ValidationError's text)."""
    dependencies = _dependencies(function)
    hints = get_type_hints(function)
    fields: dict[str, Any] = {}
    for name, parameter in inspect.signature(function).parameters.items():
        if name in dependencies:
            continue
        default = ... if parameter.default is inspect.Parameter.empty else parameter.default
        fields[name] = (hints[name], Field(default=default))
    model: type[BaseModel] = create_model(f"Input schema for `{function.__name__}`", **fields)
    return model


def run_function(function: Callable[..., Any], state: BaseModel, arguments: Mapping[str, Any]) -> Any:
    """A tool call as AgentDojo's FunctionsRuntime makes it: the arguments validated (a ValidationError is
    the call's error, as AgentDojo answers it), the environment's parts added, the function run."""
    validated = _arguments_model(function).model_validate(_lists_read(arguments)).model_dump()
    parts = {name: depends.extract_dep_from_env(state) for name, depends in _dependencies(function).items()}
    return function(**validated, **parts)


def tool_result_to_str(tool_result: Any) -> str:
    """AgentDojo's (agent_pipeline/tool_execution.py): a tool's result as the model is sent it."""
    if isinstance(tool_result, BaseModel):
        return str(yaml.safe_dump(tool_result.model_dump())).strip()
    if isinstance(tool_result, list):
        items: list[Any] = []
        for item in tool_result:
            if type(item) in [str, int]:
                items.append(str(item))
            elif isinstance(item, BaseModel):
                items.append(item.model_dump())
            else:
                raise TypeError("Not valid type for item tool result: " + str(type(item)))
        return str(yaml.safe_dump(items)).strip()
    return str(tool_result)


class TaskSuite(Generic[Env]):
    """AgentDojo's registry of a suite's tasks by id and benchmark version (agentdojo/task_suite): the
    copied task modules register their tasks on import, as they do in AgentDojo."""

    def __init__(
        self, name: str, environment_type: type[Env], tools: list[Any], benchmark_version: Version = (1, 0, 0)
    ) -> None:
        self.name = name
        self.environment_type = environment_type
        self.tools = tools
        self.benchmark_version = benchmark_version
        self._user_tasks: dict[str, dict[Version, Any]] = {}
        self._injection_tasks: dict[str, dict[Version, Any]] = {}

    def get_new_version(self, benchmark_version: Version) -> TaskSuite[Env]:
        new = copy.copy(self)
        new.benchmark_version = benchmark_version
        return new

    @staticmethod
    def _register(tasks: dict[str, dict[Version, Any]], kind: str, task: type[T], version: Version) -> None:
        """AgentDojo's: `UserTask3` is `user_task_3`, `InjectionTask3` `injection_task_3`."""
        prefix = "UserTask" if kind == "user_task" else "InjectionTask"
        number = task.__name__.removeprefix(prefix)
        if not number.isdigit():
            raise ValueError(f"tasks must be named {prefix} followed by a number, got {task.__name__}")
        task_id = f"{kind}_{int(number)}"
        task.ID = task_id  # type: ignore[attr-defined]
        tasks.setdefault(task_id, {})[version] = task()

    def register_user_task(self, task: type[T]) -> type[T]:
        self._register(self._user_tasks, "user_task", task, (1, 0, 0))
        return task

    def update_user_task(self, benchmark_version: Version) -> Callable[[type[T]], type[T]]:
        def decorator(task: type[T]) -> type[T]:
            self._register(self._user_tasks, "user_task", task, benchmark_version)
            return task

        return decorator

    def register_injection_task(self, task: type[T]) -> type[T]:
        self._register(self._injection_tasks, "injection_task", task, (1, 0, 0))
        return task

    def update_injection_task(
        self, benchmark_version: Version, new: bool = False
    ) -> Callable[[type[T]], type[T]]:
        def decorator(task: type[T]) -> type[T]:
            self._register(self._injection_tasks, "injection_task", task, benchmark_version)
            return task

        return decorator

    def get_latest_user_task_by_id(self, task_id: str, version_upperbound: Version) -> Any:
        return _latest(self._user_tasks[task_id], version_upperbound)

    def get_latest_injection_task_by_id(self, task_id: str, version_upperbound: Version) -> Any:
        return _latest(self._injection_tasks[task_id], version_upperbound)

    @property
    def user_tasks(self) -> dict[str, Any]:
        return _compatible(self._user_tasks, self.benchmark_version)

    @property
    def injection_tasks(self) -> dict[str, Any]:
        return _compatible(self._injection_tasks, self.benchmark_version)


def _latest(versions: dict[Version, Any], version_upperbound: Version) -> Any:
    """AgentDojo's: a task in its latest version below `version_upperbound` (combined tasks name theirs)."""
    return versions[max(v for v in versions if v < version_upperbound)]


def _compatible(tasks: dict[str, dict[Version, Any]], version: Version) -> dict[str, Any]:
    """AgentDojo's: each task in its highest version not above the benchmark's."""
    found = {}
    for task_id, versions in tasks.items():
        fitting = [v for v in versions if v <= version]
        if fitting:
            found[task_id] = versions[max(fitting)]
    return found


def judge(
    task: Any,
    output: str | None,
    before: Any,
    after: Any,
    calls: Iterable[dict[str, Any]],
    tools: Iterable[Any],
) -> bool:
    """AgentDojo's check of a run (TaskSuite._check_task_result): a user task's utility or an injection
    task's security, from the call trace where the task judges by it, else from the environment. The
    trace holds every call of the model, its arguments as the tools got them."""
    names = {tool.__name__ for tool in tools}
    trace = [
        FunctionCall(
            function=call["name"],
            args=(_lists_read if call["name"] in names else dict)(call["arguments"] or {}),
            id=call["id"],
        )
        for call in calls
    ]
    text = output or ""
    if hasattr(task, "security"):
        verdict = task.security_from_traces(text, before, after, trace)
        return bool(task.security(text, before, after) if verdict is None else verdict)
    verdict = task.utility_from_traces(text, before, after, trace)
    return bool(task.utility(text, before, after) if verdict is None else verdict)
