"""Tools an LVE declares: what the model is offered, and what a call of one returns.

A tool never does anything: it answers a call with the text its LVE declares (`returns`), filled with the
call's arguments and the LVE's parameters, so that a run that used tools can be recorded and replayed like
any other. `returns` may also be a list of cases, each chosen when the call's arguments match its patterns
(`when`), the last one without `when` the default: reading the `random` channel then returns what that
channel holds. The model's arguments are data: they are parsed and matched, never evaluated.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lvegit.base.errors import InvalidValue, LVEError, RegexTimeout
from lvegit.lve.prompt import MAX_CONVERSATION_CHARS, Message, Role, ToolCall, conversation_chars
from lvegit.lve.template import fill, placeholders

DEFAULT_TOOL_STEPS = 5  # how often one turn's tool calls are answered unless the LVE says otherwise
# 0: calls are recorded, never answered (a scanner's finding of the model's first decision)
MAX_TOOL_STEPS = 50


# Whether a pattern (a regular expression, run with its time limit) is found in a text: the checkers'
# pattern rules, given by the caller (this layer runs no patterns of its own).
Search = Callable[[str, str], bool]


@dataclass(frozen=True)
class ReturnCase:
    """One case of a tool's `returns`: its text, for a call whose arguments hold every field of `when` with
    a value the field's pattern is found in (a value that is no string as its JSON); no `when`: any call."""

    returns: str
    when: dict[str, str] | None = None

    def as_declared(self) -> dict[str, Any]:
        return (
            {"when": self.when, "returns": self.returns}
            if self.when is not None
            else {"returns": self.returns}
        )

    @property
    def text(self) -> str:
        """The case for people: `when channel ~ random: ...`, `otherwise: ...`."""
        if self.when is None:
            return f"otherwise: {self.returns}"
        conditions = ", ".join(f"{field} ~ {pattern}" for field, pattern in self.when.items())
        return f"when {conditions}: {self.returns}"

    def takes(self, arguments: dict[str, Any], search: Search) -> bool:
        return all(
            field in arguments and search(pattern, argument_text(arguments[field]))
            for field, pattern in (self.when or {}).items()
        )


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]  # JSON Schema of the arguments
    # A template over the arguments and the LVE's parameters, or cases chosen by the arguments (None: never
    # answered)
    returns: str | tuple[ReturnCase, ...] | None

    def as_declared(self) -> dict[str, Any]:
        """The tool as test.json declares it (its fields are test.json's keys, in their order)."""
        returns = self.returns
        declared = [case.as_declared() for case in returns] if isinstance(returns, tuple) else returns
        return {
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
            "returns": declared,
        }

    @property
    def returns_text(self) -> str | None:
        """What a call returns, in one line for people: the text, or each case with its conditions."""
        if self.returns is None or isinstance(self.returns, str):
            return self.returns
        return "; ".join(case.text for case in self.returns)

    def template_for(self, arguments: dict[str, Any], search: Search) -> str | None:
        """The text a call with these arguments returns: the first case it takes (None: none)."""
        if isinstance(self.returns, str) or self.returns is None:
            return self.returns
        return next((case.returns for case in self.returns if case.takes(arguments, search)), None)

    def as_api(self) -> dict[str, Any]:
        """The tool as the chat-completions API is offered it."""
        function = {"name": self.name, "description": self.description, "parameters": self.parameters}
        return {"type": "function", "function": function}


def argument_text(value: Any) -> str:
    """An argument as a pattern or a template sees it: a string as it is, any other value as its JSON."""
    return value if isinstance(value, str) else json.dumps(value)


# An environment's answer to the call of one of its tools (its code, run in the sandbox): given the call and
# its arguments as an object, the text the model is sent and why the tool failed (None: it did not).
World = Callable[[ToolCall, dict[str, Any]], tuple[str, str | None]]


def answer(
    tools: dict[str, Tool],
    call: ToolCall,
    params: dict[str, Any],
    search: Search,
    world: World | None = None,
) -> tuple[str, str | None]:
    """What a tool returns for a call, and why it failed (in an LVE with an environment, `world`, which
    answers the tools declared without returns; else never said). A call the tool cannot take (no such
    tool, arguments that are no JSON object, an argument its result needs left out) is answered with an
    error, as a real tool would answer it: the model sees it and the record keeps it."""
    text = _declared_answer(tools, call, params, search, world)
    if isinstance(text, tuple):
        return text
    return text, text if world is not None and text.startswith("error: ") else None


def _declared_answer(
    tools: dict[str, Tool], call: ToolCall, params: dict[str, Any], search: Search, world: World | None
) -> str | tuple[str, str | None]:
    tool = tools.get(call.name)
    if tool is None:
        return f"error: there is no tool named {json.dumps(call.name)}"
    arguments = call.parsed()
    if tool.returns is None and world is not None and arguments is not None:
        return world(call, arguments)
    if tool.returns is None:  # validation requires returns where calls are answered
        return f"error: {tool.name} returns nothing in this LVE"
    if arguments is None:
        return f"error: the arguments of {tool.name} are not a JSON object"
    # The LVE's parameters win over an argument of the same name: the return says what the LVE means.
    values = {**{key: argument_text(value) for key, value in arguments.items()}, **params}
    try:
        template = tool.template_for(arguments, search)
        if template is None:
            return f"error: {tool.name} has no result for these arguments"
        missing = [name for name in placeholders(template) if name not in values]
        if missing:
            return f"error: {tool.name} needs the argument {json.dumps(missing[0])}"
        return fill(template, values)
    except (InvalidValue, RegexTimeout) as exc:  # a value its format spec cannot take, a pattern too slow
        return f"error: {tool.name}: {exc}"


def unique_calls(calls: tuple[ToolCall, ...], step: int) -> tuple[ToolCall, ...]:
    """Calls without an id, or with one used twice, get their own (`call_<step>_<n>`): a result names its
    call."""
    unique: list[ToolCall] = []
    seen: set[str] = set()
    for number, call in enumerate(calls, start=1):
        if not call.id or call.id in seen:
            call = ToolCall(f"call_{step}_{number}", call.name, call.arguments)
        seen.add(call.id)
        unique.append(call)
    return tuple(unique)


def answered_step(
    tools: dict[str, Tool],
    text: str | None,
    calls: tuple[ToolCall, ...],
    params: dict[str, Any],
    step: int,
    conversation: list[Message],
    search: Search,
    world: World | None = None,
) -> list[Message]:
    """One step of a model's turn: its message with its calls, and a tool message answering each. The
    model decides how many calls it makes: the results are counted as they are made, and a step that would
    take the conversation past MAX_CONVERSATION_CHARS is an error before it does."""
    asked = Message(text, Role.assistant, tool_calls=unique_calls(calls, step), step=step)
    step_messages, chars = [asked], conversation_chars([*conversation, asked])
    for call in asked.tool_calls:
        result, error = answer(tools, call, params, search, world)
        step_messages.append(Message(result, Role.tool, tool_call_id=call.id, step=step, error=error))
        chars += conversation_chars(step_messages[-1:])
        if chars > MAX_CONVERSATION_CHARS:
            raise LVEError(
                f"the conversation grows past {MAX_CONVERSATION_CHARS:,} characters with the model's "
                f"{len(calls)} tool calls and their results"
            )
    return step_messages
