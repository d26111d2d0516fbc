"""Messages and prompts: parsing inline and file prompts, filling parameters, multi-variable holes."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from lvegit.base.errors import InvalidValue
from lvegit.lve.problems import json_type
from lvegit.lve.template import MAX_FILLED_BYTES, TemplateError, fill

# What one conversation may hold (its prompt, responses and tool results): each template is bounded on its
# own, but a prompt of thousands of messages, or a turn of thousands of tool calls, is bounded only here.
MAX_CONVERSATION_CHARS = 4 * MAX_FILLED_BYTES

DEFAULT_RESPONSE_VARIABLE = "response"


class Role(StrEnum):
    user = "user"
    assistant = "assistant"
    system = "system"
    developer = "developer"  # the system role as OpenAI's newer models name it: a prompt sends it as written
    tool = "tool"  # a tool's result, answering an assistant's tool call

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class ToolCall:
    """A call of a tool as the model (or a prompt) wrote it: `arguments` is the model's text, which need not
    be JSON."""

    id: str
    name: str
    arguments: str

    def parsed(self) -> dict[str, Any] | None:
        """The arguments as a JSON object, None when they are not one."""
        try:
            value = json.loads(self.arguments)
        except (ValueError, RecursionError):
            return None
        return value if isinstance(value, dict) else None

    @classmethod
    def from_api(cls, call: Any) -> ToolCall:
        """A call in the chat-completions format (`{"id", "function": {"name", "arguments"}}`) as the model
        wrote it. A malformed one is kept as such: a name or arguments that are no text become their JSON,
        a missing part is empty (the tool answers it with an error; the record shows what was sent)."""
        call = call if isinstance(call, dict) else {}
        function = call.get("function") if isinstance(call.get("function"), dict) else {}

        def text(part: Any) -> str:
            if part is None:
                return ""
            return part if isinstance(part, str) else json.dumps(part, ensure_ascii=False)

        return cls(text(call.get("id")), text(function.get("name")), text(function.get("arguments")))

    def as_json(self) -> dict[str, Any]:
        """In the chat-completions format."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass
class Message:
    content: str | None = None
    role: Role = Role.user
    variable: str | None = None
    image_url: str | None = None
    # Where the message came from in a prompt file (1-based), for error messages only.
    line: int | None = field(default=None, compare=False, repr=False)
    tool_calls: tuple[ToolCall, ...] = ()  # an assistant's calls of tools
    tool_call_id: str | None = None  # the call a tool message answers
    # Set on the messages of a model's turn that used tools: the turn's step (1 = its first request).
    step: int | None = None
    tool_name: str | None = None  # the tool a tool message of a prompt says answered (its `name`)
    error: str | None = None  # a tool message of an environment's tool that failed: why (its content too)

    @property
    def is_hole(self) -> bool:
        """An assistant message whose content the model is to write."""
        return (
            self.role == Role.assistant and self.content is None and not self.tool_calls and self.step is None
        )

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"role": self.role.value, "content": self.content}
        if self.variable is not None:
            data["variable"] = self.variable
        if self.image_url is not None:
            data["image_url"] = self.image_url
        if self.tool_calls:
            data["tool_calls"] = [call.as_json() for call in self.tool_calls]
        if self.tool_call_id is not None:
            data["tool_call_id"] = self.tool_call_id
        if self.step is not None:
            data["step"] = self.step
        if self.tool_name is not None:
            data["name"] = self.tool_name
        if self.error is not None:
            data["error"] = self.error
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Message:
        """A message as `as_json` wrote it."""
        calls = tuple(ToolCall.from_api(call) for call in data.get("tool_calls") or ())
        return cls(
            data.get("content"),
            Role(data.get("role", "user")),
            data.get("variable"),
            data.get("image_url"),
            tool_calls=calls,
            tool_call_id=data.get("tool_call_id"),
            step=data.get("step"),
            tool_name=data.get("name"),
            error=data.get("error"),
        )


def fill_messages(messages: list[Message], values: dict[str, Any]) -> list[Message]:
    """Substitute parameters into user/system content and every image_url; assistant text stays as written."""
    filled, chars = [], 0
    for message in messages:
        content = message.content
        if message.role != Role.assistant and content is not None:
            content = fill(content, values)
        image_url = fill(message.image_url, values) if message.image_url is not None else None
        filled.append(replace(message, content=content, image_url=image_url))
        chars += conversation_chars(filled[-1:])
        if chars > MAX_CONVERSATION_CHARS:  # counted as it fills: each message may hold a template's limit
            raise TemplateError(f"the prompt fills to more than {MAX_CONVERSATION_CHARS:,} characters")
    return filled


def conversation_chars(messages: list[Message]) -> int:
    """The characters of a conversation's texts, image URLs and tool call arguments."""
    return sum(
        len(m.content or "") + len(m.image_url or "") + sum(len(call.arguments) for call in m.tool_calls)
        for m in messages
    )


def transcript(messages: list[Message]) -> str:
    """Messages as `role: content` lines, a turn the model is to write as [hole], each tool call as
    `assistant calls name(arguments)` and a tool's result as `tool (call id): result` (READMEs, comments,
    the LLM judge)."""
    lines = []
    for message in messages:
        if message.role == Role.tool:
            lines.append(f"tool ({message.tool_call_id}): {message.content}")
            continue
        if message.content is not None or not message.tool_calls:
            lines.append(f"{message.role.value}: {'[hole]' if message.content is None else message.content}")
        lines.extend(
            f"{message.role.value} calls {call.name}({call.arguments})" for call in message.tool_calls
        )
    return "\n".join(lines)


def with_trailing_hole(messages: list[Message]) -> list[Message]:
    """The prompt as the model sees it: a trailing `response` hole is appended when none ends it."""
    if messages and messages[-1].is_hole:
        return list(messages)
    return [*messages, Message(None, Role.assistant, DEFAULT_RESPONSE_VARIABLE)]


def variable_names(messages: list[Message]) -> list[str | None]:
    """Per message: its variable name if it is an assistant message (unnamed ones get their index among
    assistant messages, as lve-tools does), else None. Messages that call tools (a prompt's earlier tool
    exchange, the steps of a model's turn) are no variables unless named: a turn's last message carries
    the turn's name."""
    names: list[str | None] = []
    count = 0
    for message in messages:
        if message.role == Role.assistant and (
            message.variable is not None or (not message.tool_calls and message.step is None)
        ):
            names.append(message.variable if message.variable is not None else str(count))
            count += 1
        else:
            names.append(None)
    return names


def hole_variables(messages: list[Message]) -> list[str]:
    """Names of the holes of a prompt (with its trailing hole), in order."""
    full = with_trailing_hole(messages)
    return [
        name for message, name in zip(full, variable_names(full), strict=True) if message.is_hole and name
    ]


def variables_of(conversation: list[Message]) -> dict[str, str | None]:
    """All assistant turns of a conversation by variable name."""
    return {
        name: message.content
        for message, name in zip(conversation, variable_names(conversation), strict=True)
        if name is not None
    }


def is_turn(value: Any) -> bool:
    """Whether a recorded value is a model's turn that used tools (`{"steps": [...]}`) rather than text."""
    return isinstance(value, dict) and isinstance(value.get("steps"), list)


def fill_holes(prompt: list[Message], response: Any, tools: bool = False) -> list[Message]:
    """The conversation with recorded output: a string fills the only hole, an object fills holes by name.
    With `tools` (the LVE declares tools), a hole's value may also be a turn that used them (`turn_of`)."""
    full = with_trailing_hole(prompt)
    names = variable_names(full)
    holes = [name for message, name in zip(full, names, strict=True) if message.is_hole]
    if isinstance(response, str) or (tools and is_turn(response) and len(holes) == 1):
        if len(holes) != 1:
            raise InvalidValue(
                f"the prompt has {len(holes)} holes ({', '.join(map(str, holes))}), "
                "so the response must be an object with one entry per variable"
            )
        values = {holes[0]: response}
    elif isinstance(response, dict):
        missing = [name for name in holes if name not in response]
        if missing:
            raise InvalidValue(f"the response has no value for variable(s) {', '.join(map(str, missing))}")
        values = response
    else:
        raise InvalidValue(f"a response must be a string or an object, not {json_type(response)}")
    filled: list[Message] = []
    for message, name in zip(full, names, strict=True):
        if not message.is_hole:
            filled.append(message)
            continue
        assert name is not None  # every assistant message has a name
        value = values[name]
        if tools and is_turn(value):
            filled.extend(turn_messages(value, message, name))
        elif isinstance(value, str):
            filled.append(replace(message, content=value))
        else:
            kind = 'a string or a turn ({"steps": [...]})' if tools else "a string"
            raise InvalidValue(f"the response for variable '{name}' must be {kind}, not {json_type(value)}")
    return filled


def turn_of(messages: list[Message]) -> dict[str, Any]:
    """A model's turn that used tools, as an instance records it: every step (a request) with its text and
    its calls, each call with the result it was answered with. The turn stopped at the step limit when its
    last step has calls (they were not answered)."""
    results = _results(messages)
    errors = {(m.step, m.tool_call_id): m.error for m in messages if m.error is not None}
    steps = []
    for message in messages:
        if message.role != Role.assistant:
            continue
        step: dict[str, Any] = {"content": message.content}
        if message.tool_calls:
            step["tool_calls"] = [
                {
                    "id": call.id,
                    "name": call.name,
                    "arguments": call.arguments,
                    **(
                        {"result": results[message.step, call.id]}
                        if (message.step, call.id) in results
                        else {}
                    ),
                    **({"error": errors[message.step, call.id]} if (message.step, call.id) in errors else {}),
                }
                for call in message.tool_calls
            ]
        steps.append(step)
    return {"steps": steps}


def response_text(value: Any, indent: int | None = 1, separator: str = "\n") -> str:
    """A recorded response as readers see it (show, the PR comment, the site): text as it is; a turn that
    used tools as one line per call (`name(arguments) -> result`) and its text; anything else as JSON."""
    if isinstance(value, str):
        return value
    if not is_turn(value) or not all(isinstance(step, dict) for step in value["steps"]):
        return json.dumps(value, ensure_ascii=False, indent=indent)
    lines = []
    for step in value["steps"]:
        if step.get("content"):
            lines.append(str(step["content"]))
        for call in step.get("tool_calls") or []:
            if not isinstance(call, dict):
                lines.append(str(call))
                continue
            shown, result = f"calls {call.get('name')}({call.get('arguments')})", call.get("result")
            lines.append(
                f"{shown} -> {result}" if result is not None else f"{shown} (not answered: step limit)"
            )
    return separator.join(lines)


def turn_messages(turn: dict[str, Any], hole: Message, name: str) -> list[Message]:
    """The messages of a recorded turn (`turn_of`) in place of its hole; InvalidValue names what is wrong."""
    steps = turn["steps"]
    if not steps:
        raise InvalidValue(f"the turn of variable '{name}' has no steps")
    messages: list[Message] = []
    for number, step in enumerate(steps, start=1):
        where = f"variable '{name}', step {number}"
        if not isinstance(step, dict):
            raise InvalidValue(f"{where}: a step must be an object, not {json_type(step)}")
        content, calls = step.get("content"), step.get("tool_calls", [])
        if content is not None and not isinstance(content, str):
            raise InvalidValue(f"{where}: content must be a string or null, not {json_type(content)}")
        if not isinstance(calls, list):
            raise InvalidValue(f"{where}: tool_calls must be a list, not {json_type(calls)}")
        last = number == len(steps)
        parsed, answers = [], []
        for index, call in enumerate(calls):
            fields = ("id", "name", "arguments", "result") if not last else ("id", "name", "arguments")
            missing = [
                key for key in fields if not isinstance(call, dict) or not isinstance(call.get(key), str)
            ]
            if missing:
                raise InvalidValue(f"{where}, tool call {index + 1}: needs text for {', '.join(missing)}")
            parsed.append(ToolCall(call["id"], call["name"], call["arguments"]))
            if "result" in call:
                error = call.get("error")
                answers.append(
                    Message(
                        str(call["result"]),
                        Role.tool,
                        tool_call_id=call["id"],
                        step=number,
                        error=error if isinstance(error, str) else None,
                    )
                )
        if not last and not calls:
            raise InvalidValue(f"{where}: only the last step may come without tool calls")
        text = "" if content is None and last else content  # the turn's text: what checkers read
        messages.append(
            Message(
                text,
                Role.assistant,
                name if last else None,
                hole.image_url if last else None,
                tool_calls=tuple(parsed),
                step=number,
            )
        )
        messages.extend(answers)
    return messages


def model_tool_calls(conversation: list[Message]) -> list[dict[str, Any]]:
    """The tools the model called in a conversation (not the calls a prompt wrote), in order: name,
    arguments as written, `parsed` (the arguments as an object, None where they are no JSON object),
    `result` (what the tool answered, None when the call was not answered: the step limit), `error` (why an
    environment's tool failed, else None) and `step` (the step of the turn that made it, from 1)."""
    results = _results(conversation)
    errors = {(m.step, m.tool_call_id): m.error for m in conversation if m.error is not None}
    return [
        {
            "id": call.id,
            "name": call.name,
            "arguments": call.arguments,
            "parsed": call.parsed(),
            "result": results.get((message.step, call.id)),
            "error": errors.get((message.step, call.id)),
            "step": message.step,
        }
        for message in conversation
        if message.step is not None
        for call in message.tool_calls
    ]


def _results(messages: list[Message]) -> dict[tuple[int | None, str | None], str | None]:
    """The results of a model's tool calls by step and call id (a model may use one id in several steps)."""
    return {
        (m.step, m.tool_call_id): m.content for m in messages if m.role == Role.tool and m.step is not None
    }


def turns_of(conversation: list[Message]) -> dict[str, Any]:
    """Every assistant turn of a conversation by variable name, a turn that used tools as `turn_of` has it."""
    turns: dict[str, Any] = {}
    pending: list[Message] = []
    for message, name in zip(conversation, variable_names(conversation), strict=True):
        if message.step is not None:
            pending.append(message)
        if name is not None:
            turns[name] = turn_of(pending) if pending else message.content
            pending = []
    return turns
