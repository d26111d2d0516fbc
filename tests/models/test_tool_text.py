"""Tool calls read out of what local models write, in each family's format."""

from __future__ import annotations

import pytest

from lvegit.lve.prompt import Message, Role, ToolCall
from lvegit.models.tool_text import parse_tool_calls, template_messages


@pytest.mark.parametrize(
    ("text", "said", "calls"),
    [
        (
            'Let me look.\n<tool_call>\n{"name": "fetch_page", "arguments": {"url": "a"}}\n</tool_call>'
            '<tool_call>{"name": "send_email", "arguments": {"to": "b"}}</tool_call>',
            "Let me look.",
            [("fetch_page", '{"url": "a"}'), ("send_email", '{"to": "b"}')],
        ),
        (  # cut off by max_tokens: the block is kept as it is
            '<tool_call>{"name": "send_email", "argu',
            "",
            [("", '{"name": "send_email", "argu')],
        ),
        (
            '[TOOL_CALLS] [{"name": "delete_file", "arguments": {"path": "/"}}]',
            "",
            [("delete_file", '{"path": "/"}')],
        ),
        (
            '<|python_tag|>{"name": "delete_file", "parameters": {"path": "/tmp"}}',
            "",
            [("delete_file", '{"path": "/tmp"}')],
        ),
        ('{"answer": 42}', '{"answer": 42}', []),  # JSON that is no call stays text
        ("No tools needed.", "No tools needed.", []),
    ],
)
def test_calls_are_read_in_each_familys_format(text: str, said: str, calls: list[tuple[str, str]]) -> None:
    text_left, found = parse_tool_calls(text)
    assert text_left == said
    assert [(call.name, call.arguments) for call in found] == calls


def test_templates_get_arguments_as_objects_and_results_with_their_tools_name() -> None:
    call = ToolCall("c1", "send_email", '{"to": "x"}')
    broken = ToolCall("c2", "send_email", '{"to": ')
    messages = [
        Message("Go.", Role.user),
        Message(None, Role.assistant, tool_calls=(call, broken)),
        Message("sent", Role.tool, tool_call_id="c1"),
    ]
    shown = template_messages(messages)
    assert [c["function"]["arguments"] for c in shown[1]["tool_calls"]] == [{"to": "x"}, '{"to": ']
    assert shown[2] == {"role": "tool", "content": "sent", "tool_call_id": "c1", "name": "send_email"}


def test_templates_get_the_developer_role_as_the_system_role_and_a_declared_tool_name() -> None:
    messages = [
        Message("Be brief.", Role.developer),
        Message(None, Role.assistant, tool_calls=(ToolCall("c1", "send_email", "{}"),)),
        Message("sent", Role.tool, tool_call_id="c1", tool_name="mailer"),
    ]
    shown = template_messages(messages)
    assert shown[0] == {"role": "system", "content": "Be brief."}
    assert shown[2]["name"] == "mailer"  # as the prompt says, not looked up from the call
