from __future__ import annotations

import json

import pytest

from lvegit.lve.problems import Problems
from lvegit.lve.prompt import (
    Message,
    Role,
    fill_holes,
    fill_messages,
    hole_variables,
    parse_messages,
    parse_prompt_text,
    variables_of,
    with_trailing_hole,
)


def parse(text: str) -> tuple[list[Message], Problems]:
    problems = Problems("test.prompt")
    return parse_prompt_text(text, "", problems), problems


def test_plain_text_is_one_user_message() -> None:
    messages, problems = parse("Write to {person}.\nPlease.\n")
    assert messages == [Message("Write to {person}.\nPlease.\n", Role.user)]
    assert not problems.items


def test_plain_text_may_start_with_a_placeholder() -> None:
    messages, problems = parse("{name}, tell me a secret.")
    assert messages[0].content == "{name}, tell me a secret."
    assert not problems.items


def test_jsonl_prompt_with_lines() -> None:
    text = '{"role": "system", "content": "s"}\n\n{"content": "u"}\n{"role": "assistant", "variable": "v"}\n'
    messages, problems = parse(text)
    assert [(m.role, m.content, m.variable, m.line) for m in messages] == [
        (Role.system, "s", None, 1),
        (Role.user, "u", None, 3),
        (Role.assistant, None, "v", 4),
    ]
    assert not problems.items


def test_single_json_object_across_lines_and_json_list() -> None:
    messages, _ = parse('{\n  "role": "user",\n  "content": "hi"\n}\n')
    assert messages == [Message("hi", Role.user)]
    messages, _ = parse('[{"content": "a"}, {"role": "assistant", "content": null}]')
    assert len(messages) == 2 and messages[1].is_hole


def test_broken_jsonl_reports_its_line() -> None:
    _, problems = parse('{"content": "a"}\n{"content": "b",}\n')
    assert [(p.line, p.message.split(":")[0]) for p in problems.errors] == [(2, "invalid JSON")]


def test_broken_single_object_reports_line_and_column() -> None:
    _, problems = parse('{\n  "content": "a"\n  "role": "user"\n}')
    assert problems.errors[0].line == 3
    assert "column 3" in problems.errors[0].message


def test_empty_prompt_file() -> None:
    _, problems = parse("  \n")
    assert problems.errors[0].message == "prompt file is empty"


def test_message_validation() -> None:
    problems = Problems("test.json")
    messages = parse_messages(
        [
            {"role": "robot", "content": "x"},
            {"content": None},
            {"content": 3},
            {"content": "ok", "colour": 1},
            "s",
        ],
        "prompt",
        problems,
    )
    assert [m.content for m in messages] == ["ok"]
    rendered = [p.render() for p in problems.items]
    assert rendered == [
        "error: test.json: prompt[0].role: role must be user, system or assistant, not 'robot'",
        "error: test.json: prompt[1].content: a user message needs content",
        "error: test.json: prompt[2].content: must be a string, not a number",
        "warning: test.json: prompt[3].colour: unknown message key 'colour'",
        "error: test.json: prompt[4]: a message must be a JSON object, not a string",
    ]


def test_fill_messages_fills_user_system_and_image_url_only() -> None:
    messages = [
        Message("sys {a}", Role.system),
        Message("user {a}", Role.user, image_url="https://img/{a}.png"),
        Message("assistant {a} stays", Role.assistant),
    ]
    filled = fill_messages(messages, {"a": 1})
    assert [m.content for m in filled] == ["sys 1", "user 1", "assistant {a} stays"]
    assert filled[1].image_url == "https://img/1.png"
    assert messages[0].content == "sys {a}"  # the original is untouched


def test_trailing_hole_and_variables() -> None:
    prompt = [Message("q1"), Message(None, Role.assistant, "a1"), Message("q2")]
    assert with_trailing_hole(prompt)[-1] == Message(None, Role.assistant, "response")
    assert hole_variables(prompt) == ["a1", "response"]
    ends_in_hole = [Message("q"), Message(None, Role.assistant, "x")]
    assert with_trailing_hole(ends_in_hole) == ends_in_hole
    unnamed = [
        Message("q"),
        Message("few-shot", Role.assistant),
        Message("q2"),
        Message(None, Role.assistant),
    ]
    assert hole_variables(unnamed) == ["1"]


def test_fill_holes_with_string_and_object() -> None:
    single = [Message("q")]
    assert fill_holes(single, "answer")[-1].content == "answer"
    multi = [
        Message("q1"),
        Message(None, Role.assistant, "a1"),
        Message("q2"),
        Message(None, Role.assistant, "a2"),
    ]
    conversation = fill_holes(multi, {"a1": "x", "a2": "y"})
    assert variables_of(conversation) == {"a1": "x", "a2": "y"}
    with pytest.raises(ValueError, match="2 holes"):
        fill_holes(multi, "only one")
    with pytest.raises(ValueError, match="no value for variable"):
        fill_holes(multi, {"a1": "x"})
    with pytest.raises(ValueError, match="must be a string"):
        fill_holes(multi, {"a1": "x", "a2": 3})
    with pytest.raises(ValueError, match="string or an object"):
        fill_holes(single, 42)


def test_message_as_json_round_trip() -> None:
    message = Message("c", Role.assistant, "v", "u")
    assert json.loads(json.dumps(message.as_json())) == {
        "role": "assistant",
        "content": "c",
        "variable": "v",
        "image_url": "u",
    }
