"""Tools an LVE declares: what the model is offered, and what a call of one returns.

A tool never does anything: it answers a call with the text its LVE declares (`returns`), filled with the
call's arguments and the LVE's parameters, so that a run that used tools can be recorded and replayed like
any other. The model's arguments are data: they are parsed, never evaluated.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from lvegit.base.errors import InvalidValue, LVEError
from lvegit.lve.prompt import MAX_CONVERSATION_CHARS, Message, Role, ToolCall, conversation_chars
from lvegit.lve.template import fill, placeholders

DEFAULT_TOOL_STEPS = 5  # how often one turn's tool calls are answered unless the LVE says otherwise
# 0: calls are recorded, never answered (a scanner's finding of the model's first decision)
MAX_TOOL_STEPS = 50


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]  # JSON Schema of the arguments
    returns: str | None  # a template over the arguments and the LVE's parameters (None: never answered)

    def as_declared(self) -> dict[str, Any]:
        """The tool as test.json declares it (its fields are test.json's keys, in their order)."""
        return asdict(self)

    def as_api(self) -> dict[str, Any]:
        """The tool as the chat-completions API is offered it."""
        function = {"name": self.name, "description": self.description, "parameters": self.parameters}
        return {"type": "function", "function": function}


def answer(tools: dict[str, Tool], call: ToolCall, params: dict[str, Any]) -> str:
    """What a declared tool returns for a call. A call the tool cannot take (no such tool, arguments that
    are no JSON object, an argument its result needs left out) is answered with an error, as a real tool
    would answer it: the model sees it and the record keeps it."""
    tool = tools.get(call.name)
    if tool is None:
        return f"error: there is no tool named {json.dumps(call.name)}"
    if tool.returns is None:  # validation requires returns where calls are answered
        return f"error: {tool.name} returns nothing in this LVE"
    arguments = call.parsed()
    if arguments is None:
        return f"error: the arguments of {tool.name} are not a JSON object"
    # The LVE's parameters win over an argument of the same name: the return says what the LVE means.
    values = {
        **{key: value if isinstance(value, str) else json.dumps(value) for key, value in arguments.items()},
        **params,
    }
    try:
        missing = [name for name in placeholders(tool.returns) if name not in values]
        if missing:
            return f"error: {tool.name} needs the argument {json.dumps(missing[0])}"
        return fill(tool.returns, values)
    except InvalidValue as exc:  # a value its format spec cannot take
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
) -> list[Message]:
    """One step of a model's turn: its message with its calls, and a tool message answering each. The
    model decides how many calls it makes: the results are counted as they are made, and a step that would
    take the conversation past MAX_CONVERSATION_CHARS is an error before it does."""
    asked = Message(text, Role.assistant, tool_calls=unique_calls(calls, step), step=step)
    step_messages, chars = [asked], conversation_chars([*conversation, asked])
    for call in asked.tool_calls:
        step_messages.append(Message(answer(tools, call, params), Role.tool, tool_call_id=call.id, step=step))
        chars += conversation_chars(step_messages[-1:])
        if chars > MAX_CONVERSATION_CHARS:
            raise LVEError(
                f"the conversation grows past {MAX_CONVERSATION_CHARS:,} characters with the model's "
                f"{len(calls)} tool calls and their results"
            )
    return step_messages
