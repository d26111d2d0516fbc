"""Validation of what an LVE says about tools: their returns, the tool exchanges its prompts hold, and a
checker that judges tool calls."""

from __future__ import annotations

from lvegit.base.errors import InvalidValue
from lvegit.checkers.core import tool_names
from lvegit.checkers.registry import needs_of
from lvegit.checkers.safe_regex import compile_pattern
from lvegit.lve.problems import Problems, join_path
from lvegit.lve.prompt import Message, Role
from lvegit.lve.spec import LVE
from lvegit.lve.template import TemplateError, braces_hint, placeholders
from lvegit.lve.tools import ReturnCase, Tool


def check_tools(lve: LVE, prompts: list[tuple[str, str, list[Message]]], problems: Problems) -> set[str]:
    """The problems of an LVE's tools; returns the prompt parameters their returns use. `prompts`: each
    prompt's file, the JSON path of its messages there, and its messages."""
    used = _check_returns(lve, problems)
    for file, base, messages in prompts:
        _check_exchange(lve, file, base, messages, problems)
    if "tools" in lve.default_model_args:
        problems.error(
            "default_model_args.tools", "declare tools in the LVE's 'tools' (each with what it returns)"
        )
    if lve.max_tool_steps is not None and not lve.tools:
        problems.warning("max_tool_steps", "the LVE declares no tools, so no step is ever taken")
    if needs_of(lve.checker_name).tools:
        _check_checker_names(lve, problems)
    return used


def _check_returns(lve: LVE, problems: Problems) -> set[str]:
    used: set[str] = set()
    for index, tool in enumerate(lve.tools.values()):
        where = join_path(join_path("tools", index), "returns")
        if tool.returns is None:
            if lve.step_limit > 0 and lve.environment is None:  # else its function answers (or is missing)
                problems.error(where, "say what a call returns (or set max_tool_steps to 0: never answered)")
            continue
        arguments = set(tool.parameters.get("properties", {}))
        if isinstance(tool.returns, str):
            used |= _check_template(lve, tool, tool.returns, where, arguments, problems)
            continue
        if not tool.returns:
            problems.error(where, "give at least one case")
        for number, case in enumerate(tool.returns):
            at = join_path(where, number)
            used |= _check_template(lve, tool, case.returns, join_path(at, "returns"), arguments, problems)
            _check_case(tool, case, number == len(tool.returns) - 1, at, arguments, problems)
    return used


def _check_template(
    lve: LVE, tool: Tool, template: str, where: str, arguments: set[str], problems: Problems
) -> set[str]:
    """The problems of one text a tool returns; the prompt parameters it uses."""
    try:
        names = placeholders(template)
    except TemplateError as exc:
        problems.error(where, str(exc))
        return set()
    for name in names:
        if name not in lve.prompt_parameters and name not in arguments:
            problems.error(
                where,
                f"{{{name}}} is neither an argument of {tool.name} (its parameters' properties) nor a "
                f"prompt parameter{braces_hint(name)}",
            )
    return {name for name in names if name in lve.prompt_parameters}


def _check_case(
    tool: Tool, case: ReturnCase, last: bool, where: str, arguments: set[str], problems: Problems
) -> None:
    """A case's conditions name the tool's arguments with patterns that compile; only the last has none."""
    if case.when is None:
        if not last:
            problems.error(
                where, "only the last case may leave out 'when' (the default): later ones never apply"
            )
        return
    for field, pattern in case.when.items():
        at = join_path(join_path(where, "when"), field)
        if field not in arguments:
            problems.error(at, f"'{field}' is not an argument of {tool.name} (its parameters' properties)")
        try:
            compile_pattern(pattern)
        except InvalidValue as exc:
            problems.error(at, str(exc))


def _check_exchange(lve: LVE, file: str, base: str, messages: list[Message], problems: Problems) -> None:
    """A prompt's tool calls name declared tools, and each tool message answers an earlier call."""
    called: set[str] = set()
    for position, message in enumerate(messages):
        where = join_path(base, position) if base else f"[{position}]"
        for number, call in enumerate(message.tool_calls):
            called.add(call.id)
            if call.name not in lve.tools:
                declared = ", ".join(lve.tools) or "none"
                problems.error(
                    join_path(join_path(join_path(where, "tool_calls"), number), "function.name"),
                    f"calls '{call.name}', which the LVE does not declare (tools: {declared})",
                    message.line,
                    file=file,
                )
        if message.role == Role.tool and message.tool_call_id not in called:
            problems.error(
                join_path(where, "tool_call_id"),
                f"answers '{message.tool_call_id}', which no earlier assistant message of this prompt calls",
                message.line,
                file=file,
            )


def _check_checker_names(lve: LVE, problems: Problems) -> None:
    if not lve.tools:
        problems.error(
            "checker_args.checker_name", f"{lve.checker_name} judges tool calls: the LVE declares no tools"
        )
        return
    sequence = lve.checker_args.get("sequence")
    conditions = [
        (join_path(join_path("sequence", number), "tools"), condition.get("tools"))
        for number, condition in enumerate(sequence if isinstance(sequence, list) else [])
        if isinstance(condition, dict)
    ]
    for argument, value in [
        (name, lve.checker_args.get(name)) for name in ("tools", "allowed_tools")
    ] + conditions:
        try:
            names = tool_names(value, argument) or ()
        except InvalidValue:  # building the checker reports it
            continue
        for name in names:
            if name not in lve.tools:
                problems.warning(
                    join_path("checker_args", argument),
                    f"'{name}' is no tool the LVE declares (the model can still call it: its call is "
                    f"answered with an error)",
                )
