"""Tool use with a local model: the conversation as chat templates take it, and the calls read back out of
the generated text in the formats model families write them.

- Hermes, Qwen 2.5/3 and others: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, one block per
  call;
- Mistral: `[TOOL_CALLS] [{"name": ..., "arguments": {...}}, ...]`;
- Llama 3.1 and later: the whole answer one JSON object `{"name": ..., "parameters": {...}}` (after
  `<|python_tag|>` where the model writes one).
A block that does not parse is kept as a call with no name and the block as its arguments: the tool answers
it with an error and the record shows what the model wrote.
"""

from __future__ import annotations

import json
import re
from typing import Any

from lvegit.lve.prompt import Message, Role, ToolCall

_HERMES = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)
_MISTRAL = "[TOOL_CALLS]"
_PYTHON_TAG = "<|python_tag|>"


def template_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Messages as chat templates take them: a call's arguments as an object where they parse, a tool's
    result with the name of the tool it answers, the developer role as the system role (the role chat
    templates know)."""
    names = {call.id: call.name for message in messages for call in message.tool_calls}
    result = []
    for message in messages:
        role = Role.system if message.role == Role.developer else message.role
        shown: dict[str, Any] = {"role": role.value, "content": message.content or ""}
        if message.tool_calls:
            shown["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.parsed() or call.arguments},
                }
                for call in message.tool_calls
            ]
        if message.role == Role.tool:
            shown["tool_call_id"] = message.tool_call_id
            shown["name"] = message.tool_name or names.get(message.tool_call_id or "", "")
        result.append(shown)
    return result


def _call(data: Any, raw: str) -> ToolCall:
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        return ToolCall("", "", raw.strip())
    arguments = data.get("arguments", data.get("parameters", {}))
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return ToolCall(str(data.get("id") or ""), data["name"], text)


def _parsed(raw: str) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


def parse_tool_calls(text: str) -> tuple[str, tuple[ToolCall, ...]]:
    """The text a local model wrote, without its tool calls, and the calls."""
    blocks = _HERMES.findall(text)
    if blocks:
        return _HERMES.sub("", text).strip(), tuple(_call(_parsed(block), block) for block in blocks)
    if _MISTRAL in text:
        before, _, raw = text.partition(_MISTRAL)
        listed = _parsed(raw)
        calls = listed if isinstance(listed, list) else [listed]
        return before.strip(), tuple(_call(call, raw) for call in calls)
    stripped = text.strip().removeprefix(_PYTHON_TAG).strip()
    if stripped.startswith("{") and stripped.endswith("}"):
        data = _parsed(stripped)
        if isinstance(data, dict) and "name" in data and ("parameters" in data or "arguments" in data):
            return "", (_call(data, stripped),)
    return text, ()
