"""Messages and prompts: parsing inline and file prompts, filling parameters, multi-variable holes."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from lvegit.base.errors import InvalidValue
from lvegit.lve.problems import json_type
from lvegit.lve.template import fill

DEFAULT_RESPONSE_VARIABLE = "response"


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
