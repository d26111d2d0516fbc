from __future__ import annotations

from lvegit.lve.problems import Problems
from lvegit.lve.prompt import Message, Role
from lvegit.lve.prompt_file import parse_prompt_text


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


def test_messages_of_a_file_are_validated_with_their_lines() -> None:
    _, problems = parse(
        '{"content": "a"}\n{"role": "robot", "content": "b", "colour": 1}\n{"content": null}\n'
    )
    assert [p.render() for p in problems.items] == [
        "error: test.prompt:2: [1].role: must be one of 'user', 'assistant', 'system', 'developer' or 'tool', not 'robot'",
        "error: test.prompt:3: [1].content: a user message needs content",
    ]
