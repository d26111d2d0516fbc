from __future__ import annotations

import json

import pytest

from lvegit.lve.prompt import (
    Message,
    Role,
    fill_holes,
    fill_messages,
    hole_variables,
    variables_of,
    with_trailing_hole,
)


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


def test_a_prompt_of_many_messages_is_bounded_as_it_fills() -> None:
    """Each message is bounded as a template is; thousands of `{a}` messages, each filled with an instance's
    largest argument, are bounded together (they took gigabytes)."""
    big = "x" * 2_000_000
    assert len(fill_messages([Message("{a}")] * 8, {"a": big})) == 8  # 16 million characters: the limit
    with pytest.raises(ValueError, match="the prompt fills to more than 16,777,216 characters"):
        fill_messages([Message("{a}")] * 3000, {"a": big})


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
