"""test.json read against its model field by field: each problem names its field in lvegit's words, one bad
field leaves the others usable, and the model agrees with itself when validated whole."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from lvegit.lve.problems import Problems
from lvegit.lve.schema import InstanceLine, TestFile, read_test_file, validated

GOOD: dict[str, Any] = {
    "description": "Adds two numbers",
    "model": "openai/gpt-4o-mini",
    "checker_args": {"checker_name": "RegexChecker", "pattern": "x", "match_safe": False},
    "prompt": [{"content": "Compute {a} + {b}."}],
    "prompt_parameters": ["a", "b"],
}


def read(data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    problems = Problems("test.json")
    values = read_test_file(data, problems)
    return values, [f"{p.severity}: {p.field}: {p.message}" for p in problems.items]


def test_a_good_file_has_no_problems_and_typed_values() -> None:
    values, problems = read(GOOD)
    assert problems == []
    assert values["checker_args"].checker_name == "RegexChecker"
    assert values["checker_args"].arguments == {"pattern": "x", "match_safe": False}
    assert [m.content for m in values["prompt"]] == ["Compute {a} + {b}."]
    TestFile.validate(GOOD)  # the same model, validated whole, agrees


def test_every_bad_field_is_named_and_the_rest_stay_usable() -> None:
    bad = {
        **GOOD,
        "description": "  ",
        "prompt": [
            {"role": "robot", "content": "x"},
            {"content": None},
            {"content": 3},
            "s",
        ],
        "prompt_parameters": ["a", "a"],
        "tags": [{"name": "severity", "value": "extreme"}, {"name": "paper", "value": 3}],
        "author": 7,
        "default_model_args": [],
    }
    values, problems = read(bad)
    assert problems == [
        "error: description: must be a non-empty string",
        "error: prompt[0].role: must be one of 'user', 'assistant', 'system', 'developer' or 'tool', not 'robot'",
        "error: prompt[1].content: a user message needs content",
        "error: prompt[2].content: must be a string, not a number",
        "error: prompt[3]: must be an object, not a string",
        "error: prompt_parameters: 'a' is listed twice",
        "error: default_model_args: must be an object, not a list",
        "error: tags[0].value: severity must be one of low, medium, high, not 'extreme'",
        "error: tags[1].value: paper must be text",
        "error: author: must be a string, not a number",
    ]
    assert sorted(values) == ["checker_args", "model"]
    with pytest.raises(ValidationError):
        TestFile.validate(bad)


def test_missing_fields_wrong_types_and_prompt_forms() -> None:
    values, problems = read(
        {"model": 3, "checker_args": {"pattern": "x"}, "prompt_file": "a", "prompt": None}
    )
    assert problems == [
        "error: description: required field is missing",
        "error: model: must be a string, not a number",
        "error: checker_args.checker_name: required field is missing",
    ]
    assert values == {"prompt": None, "prompt_file": "a"}
    _, problems = read({**GOOD, "prompt_file": "test.prompt"})
    assert problems == [
        "error: : needs exactly one of prompt, prompt_file or multi_run_prompt (found: prompt, prompt_file)"
    ]
    _, problems = read({**GOOD, "prompt": None})
    assert problems == ["error: : needs exactly one of prompt, prompt_file or multi_run_prompt (found: none)"]


def test_runs_repetitions_and_their_prompt_forms() -> None:
    runs = [
        {"name": "one", "repetitions": 0, "prompt": [{"content": "c"}]},
        {"name": "two", "repetitions": True, "prompt": [{"content": "c"}]},
        {"name": "three", "prompt": [{"content": "c"}], "prompt_file": "x.prompt"},
        {"name": "four", "repetition": 2, "prompt_file": "x.prompt"},
    ]
    data = {**GOOD, "prompt": None, "multi_run_prompt": runs}
    _, problems = read(data)
    assert problems == [
        "error: multi_run_prompt[0].repetitions: must be at least 1",
        "error: multi_run_prompt[1].repetitions: must be a whole number, not a boolean",
        "error: multi_run_prompt[2]: needs exactly one of prompt or prompt_file",
    ]
    _, problems = read({**data, "multi_run_prompt": runs[3:]})
    assert problems == [
        "warning: multi_run_prompt[0].repetition: unknown key 'repetition' (did you mean repetitions?)"
    ]
    # each repetition is an attempt: a run sequence of 10^9 was built before anything was judged
    many = [{"name": "many", "repetitions": 10**9, "prompt": [{"content": "c"}]}]
    _, problems = read({**data, "multi_run_prompt": many})
    assert problems == ["error: multi_run_prompt[0].repetitions: must be at most 1000"]


def test_unknown_keys_are_warnings_with_a_hint_but_checker_arguments_are_not() -> None:
    _, problems = read(
        {
            **GOOD,
            "descripton": "typo",
            "colour": 1,
            "prompt": [{"content": "c", "variabel": "v"}],
            "tags": [{"name": "mine", "value": 1}],
        }
    )
    assert problems == [
        "warning: descripton: unknown key 'descripton' (did you mean description?)",
        "warning: colour: unknown key 'colour'",
        "warning: prompt[0].variabel: unknown key 'variabel' (did you mean variable?)",
        "warning: tags[0].name: unknown tag 'mine'",
    ]


def test_placeholders_are_errors_where_they_are() -> None:
    _, problems = read(
        {
            **GOOD,
            "description": "<please fill in>",
            "checker_args": {"checker_name": "x", "a": ["<please fill in>"]},
        }
    )
    assert problems == [
        "error: description: still holds the placeholder '<please fill in>': fill it in",
        "error: checker_args.a[0]: still holds the placeholder '<please fill in>': fill it in",
    ]


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ({"response": "x", "passed": False, "note": "kept"}, None),
        ({"response": {"a": "x"}, "args": {"a": 1}, "run_info": {"k": 1}}, None),
        ({"passed": True}, "response: required field is missing"),
        ({"response": 3}, "response: must be a string, object or list, not a number"),
        ({"response": "x", "passed": "yes"}, "passed: must be true or false, not a string"),
        ({"response": "x", "args": []}, "args: must be an object, not a list"),
    ],
)
def test_instance_lines(line: dict[str, Any], says: str | None) -> None:
    problems = Problems("i.jsonl")
    result = validated(InstanceLine, line, "", problems, 4)
    assert [f"{p.field}: {p.message}" for p in problems.items] == ([says] if says else [])
    assert (result is None) == bool(says)
    assert all(p.line == 4 for p in problems.items)
