"""The one small async interface every model backend implements."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from lvegit.base.errors import EXIT_SERVICE, LvegitError
from lvegit.lve.prompt import Message, ToolCall

# Requests in flight per model unless --concurrency says otherwise (a batching backend asks for more).
DEFAULT_CONCURRENCY = 8


@dataclass(frozen=True)
class Completion:
    text: str  # empty when the model only called tools
    model: str  # the model as the backend resolved it (e.g. the API's dated model name)
    run_info: dict[str, str] = field(default_factory=dict)  # where it ran (a local model's device, dtype)
    tool_calls: tuple[ToolCall, ...] = ()  # the tools it called, arguments as it wrote them


class ModelError(LvegitError):
    """A model request failed for good (bad request, unknown model, refused key, retries given up): the
    service failed, which is no finding about an LVE."""

    exit_code = EXIT_SERVICE


class TransientModelError(ModelError):
    """A model request may succeed if retried (rate limit, server error, timeout, connection, bad body).
    `refused`: nothing listens at the address (or its name does not resolve): worth a retry or two, since
    a server may be starting, but not the whole retry budget."""

    def __init__(self, message: str, retry_after: float | None = None, refused: bool = False) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.refused = refused


class ChatModel(Protocol):
    backend: str
    name: str  # the model name the backend is asked for
    concurrency: int  # requests worth having in flight at once

    async def complete(self, messages: list[Message], model_args: dict[str, Any]) -> Completion: ...

    async def close(self) -> None: ...


def api_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Messages in the chat-completions format; an image_url makes the content a list of parts. An
    assistant message that only called tools has null content, as the API writes it."""
    result = []
    for message in messages:
        content: Any = message.content or ("" if not message.tool_calls else None)
        if message.image_url is not None:
            content = [
                {"type": "text", "text": content},
                {"type": "image_url", "image_url": {"url": message.image_url}},
            ]
        sent: dict[str, Any] = {"role": message.role.value, "content": content}
        if message.tool_calls:
            sent["tool_calls"] = [call.as_json() for call in message.tool_calls]
        if message.tool_call_id is not None:
            sent["tool_call_id"] = message.tool_call_id
        if message.tool_name is not None:
            sent["name"] = message.tool_name
        result.append(sent)
    return result


def chat_body(model: str, messages: list[Message], model_args: dict[str, Any]) -> dict[str, Any]:
    """The body of a chat-completions request, as sent live and as written into batch files."""
    return {"model": model, "messages": api_messages(messages), **clean_model_args(model_args)}


def clean_model_args(args: dict[str, Any]) -> dict[str, Any]:
    """Model arguments without the null values recorded instances carry (`"top_p": null`)."""
    return {key: value for key, value in args.items() if value is not None}
