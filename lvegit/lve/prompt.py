"""Messages and prompts: parsing inline and file prompts, filling parameters, multi-variable holes."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from lvegit.base.errors import InvalidValue
from lvegit.base.files import FileProblem, json_lines, parse_json
from lvegit.lve.problems import Problems, join_path
from lvegit.lve.template import fill

DEFAULT_RESPONSE_VARIABLE = "response"
MESSAGE_KEYS = ("content", "role", "variable", "image_url")


class Role(StrEnum):
    user = "user"
    assistant = "assistant"
    system = "system"

    def __str__(self) -> str:
        return self.value


@dataclass
class Message:
    content: str | None = None
    role: Role = Role.user
    variable: str | None = None
    image_url: str | None = None
    # Where the message came from in a prompt file (1-based), for error messages only.
    line: int | None = field(default=None, compare=False, repr=False)

    @property
    def is_hole(self) -> bool:
        """An assistant message whose content the model is to write."""
        return self.role == Role.assistant and self.content is None

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"role": self.role.value, "content": self.content}
        if self.variable is not None:
            data["variable"] = self.variable
        if self.image_url is not None:
            data["image_url"] = self.image_url
        return data


def parse_message(value: Any, path: str, problems: Problems, line: int | None = None) -> Message | None:
    """One message object; problems are reported at `path` (and `line` for prompt files)."""
    if not isinstance(value, dict):
        problems.error(path, f"a message must be a JSON object, not {json_type(value)}", line)
        return None
    for key in value:
        if key not in MESSAGE_KEYS:
            problems.warning(join_path(path, key), f"unknown message key '{key}'", line)
    role_value = value.get("role", "user")
    try:
        role = Role(role_value)
    except ValueError:
        problems.error(
            join_path(path, "role"), f"role must be user, system or assistant, not {role_value!r}", line
        )
        return None
    ok = True
    for key in ("content", "variable", "image_url"):
        if value.get(key) is not None and not isinstance(value[key], str):
            problems.error(join_path(path, key), f"must be a string, not {json_type(value[key])}", line)
            ok = False
    if role != Role.assistant and value.get("content") is None:
        problems.error(join_path(path, "content"), f"a {role.value} message needs content", line)
        ok = False
    if not ok:
        return None
    return Message(value.get("content"), role, value.get("variable"), value.get("image_url"), line)


def parse_messages(value: Any, path: str, problems: Problems) -> list[Message]:
    if not isinstance(value, list):
        problems.error(path, f"must be a list of messages, not {json_type(value)}")
        return []
    if not value:
        problems.error(path, "must hold at least one message")
    messages = [parse_message(item, join_path(path, i), problems) for i, item in enumerate(value)]
    return [m for m in messages if m is not None]


_LOOKS_LIKE_JSON = re.compile(r"\A\s*(\{\s*\"|\[\s*\{)")


def parse_prompt_text(text: str, path: str, problems: Problems) -> list[Message]:
    """A prompt file: one JSON object per line, one JSON object or list (across lines), or plain text.

    A file that starts like JSON is held to JSON, so a typo reports its line instead of silently becoming
    a plain-text prompt.
    """
    if not _LOOKS_LIKE_JSON.match(text):
        if not text.strip():
            problems.error(path, "prompt file is empty")
            return []
        return [Message(text, Role.user, line=1)]
    whole_error: FileProblem | None = None
    try:
        whole = parse_json(text)
    except FileProblem as exc:
        whole_error = exc
    else:
        if isinstance(whole, dict):
            message = parse_message(whole, path, problems, line=1)
            return [message] if message else []
        if isinstance(whole, list):
            return parse_messages(whole, path, problems)
    messages: list[Message] = []
    for number, value in json_lines(text.splitlines()):
        if isinstance(value, FileProblem):
            # A JSONL file whose first line already fails is more likely one broken multi-line object.
            report = whole_error if not messages and whole_error is not None else value
            problems.error(path, report.message, report.line)
            return []
        message = parse_message(value, f"{path}[{len(messages)}]", problems, line=number)
        if message is not None:
            messages.append(message)
    return messages


def fill_messages(messages: list[Message], values: dict[str, Any]) -> list[Message]:
    """Substitute parameters into user/system content and every image_url; assistant text stays as written."""
    filled = []
    for message in messages:
        content = message.content
        if message.role != Role.assistant and content is not None:
            content = fill(content, values)
        image_url = fill(message.image_url, values) if message.image_url is not None else None
        filled.append(replace(message, content=content, image_url=image_url))
    return filled


def transcript(messages: list[Message]) -> str:
    """Messages as `role: content` lines, a turn the model is to write as [hole] (READMEs, PR comments)."""
    return "\n".join(f"{m.role.value}: {'[hole]' if m.content is None else m.content}" for m in messages)


def with_trailing_hole(messages: list[Message]) -> list[Message]:
    """The prompt as the model sees it: a trailing `response` hole is appended when none ends it."""
    if messages and messages[-1].is_hole:
        return list(messages)
    return [*messages, Message(None, Role.assistant, DEFAULT_RESPONSE_VARIABLE)]


def variable_names(messages: list[Message]) -> list[str | None]:
    """Per message: its variable name if it is an assistant message (unnamed ones get their index among
    assistant messages, as lve-tools does), else None."""
    names: list[str | None] = []
    count = 0
    for message in messages:
        if message.role == Role.assistant:
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


def fill_holes(prompt: list[Message], response: Any) -> list[Message]:
    """The conversation with recorded output: a string fills the only hole, an object fills holes by name."""
    full = with_trailing_hole(prompt)
    names = variable_names(full)
    holes = [name for message, name in zip(full, names, strict=True) if message.is_hole]
    if isinstance(response, str):
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
    filled = []
    for message, name in zip(full, names, strict=True):
        if message.is_hole:
            value = values[name]
            if not isinstance(value, str):
                raise InvalidValue(
                    f"the response for variable '{name}' must be a string, not {json_type(value)}"
                )
            message = replace(message, content=value)
        filled.append(message)
    return filled


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list"}.get(
        type(value), "an object"
    )
