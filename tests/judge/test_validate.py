from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lvegit.judge.validate import validate_lve
from lvegit.lve.repo import Repository

from builders import RepoBuilder, instance


def problems(repo: RepoBuilder, lve_dir: Path, strict: bool = False) -> list[str]:
    report = validate_lve(Repository(repo.root.resolve()), lve_dir, strict)
    return [p.render() for p in (*report.errors, *report.warnings)]


T = "repository/dummy/add/openai--gpt-4o-mini/test.json"
# A checker that reads no parameter, for LVEs whose prompt takes none.
NO_PARAMETERS = {"checker_args": {"checker_name": "LambdaChecker", "func": "lambda r: r == '3'"}}
INSTANCES = "repository/dummy/add/openai--gpt-4o-mini/instances/i.jsonl"


def test_basic_lve_is_valid(repo: RepoBuilder) -> None:
    lve_dir = repo.lve(instances={"i.jsonl": [instance("3", True, a=1, b=2), instance("4", False, a=1, b=2)]})
    assert problems(repo, lve_dir) == []


def test_not_exactly_one_prompt_form(repo: RepoBuilder) -> None:
    none = repo.lve("dummy/none", {"prompt": None, "prompt_parameters": None, **NO_PARAMETERS})
    assert problems(repo, none) == [
        "error: repository/dummy/none/openai--gpt-4o-mini/test.json: needs exactly one of prompt, prompt_file or "
        "multi_run_prompt (found: none)"
    ]
    two = repo.lve("dummy/two", {"prompt_file": "test.prompt"}, files={"test.prompt": "{a}{b}"})
    assert problems(repo, two)[0].endswith(
        "needs exactly one of prompt, prompt_file or multi_run_prompt (found: prompt, prompt_file)"
    )


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ({"description": None}, f"error: {T}: description: required field is missing"),
        ({"description": ""}, f"error: {T}:2: description: must be a non-empty string"),
        ({"model": 7}, f"error: {T}:3: model: must be a string, not a number"),
        ({"checker_args": None}, f"error: {T}: checker_args: required field is missing"),
        (
            {"checker_args": {"func": "lambda r: True"}},
            f"error: {T}:4: checker_args.checker_name: required field is missing",
        ),
        (
            {"checker_args": ["LambdaChecker"]},
            f"error: {T}:4: checker_args: must be an object, not a list",
        ),
    ],
)
def test_required_fields(repo: RepoBuilder, override: dict[str, Any], expected: str) -> None:
    assert expected in problems(repo, repo.lve(test=override))


@pytest.mark.parametrize(
    ("name", "meant"),
    [("MonotonicityCheker", "MonotonicityChecker"), ("regexchecker", "RegexChecker"), ("Evl", "Evil")],
)
def test_an_unknown_checker_suggests_the_nearest_name(repo: RepoBuilder, name: str, meant: str) -> None:
    files = {
        "checker/checker.py": "from lvegit.checkers import BaseChecker\nclass Evil(BaseChecker):\n    pass\n"
    }
    lve_dir = repo.lve(test={"checker_args": {"checker_name": name}}, files=files)
    [message] = problems(repo, lve_dir)
    assert f"unknown checker '{name}' (did you mean {meant}?): not one of" in message


def test_unknown_checker_and_arguments(repo: RepoBuilder) -> None:
    lve_dir = repo.lve(test={"checker_args": {"checker_name": "NoSuchChecker"}})
    [message] = problems(repo, lve_dir)
    assert message.startswith(
        f"error: {T}:5: checker_args.checker_name: unknown checker 'NoSuchChecker': not one of"
    )
    assert message.endswith("and no class of that name in checker/checker*.py")
    lve_dir = repo.lve(test={"checker_args": {"checker_name": "RegexChecker", "patern": "x"}})
    assert problems(repo, lve_dir) == [
        f"error: {T}:4: checker_args: RegexChecker needs the argument 'pattern'",
        f"error: {T}:4: checker_args: RegexChecker needs the argument 'match_safe'",
        f"error: {T}:6: checker_args.patern: RegexChecker takes no argument 'patern'",
    ]


def test_core_checker_arguments_are_checked_by_building_the_checker(repo: RepoBuilder) -> None:
    bad_regex = {"checker_name": "RegexChecker", "pattern": "([a-z]", "match_safe": False}
    assert problems(repo, repo.lve("d/regex", {"checker_args": bad_regex}))[0].endswith(
        "checker_args: RegexChecker: invalid regular expression '([a-z]': missing ) at position 6"
    )
    bad_lambda = {"checker_name": "LambdaChecker", "func": "lambda r, a, b: __import__('os')"}
    assert (
        "name '__import__' is not a lambda parameter or an allowed builtin"
        in problems(repo, repo.lve("d/lambda", {"checker_args": bad_lambda}))[0]
    )
    bad_flag = {"checker_name": "RegexChecker", "pattern": "x", "match_safe": False, "flags": "Q"}
    assert "unknown regex flag 'Q'" in problems(repo, repo.lve("d/flag", {"checker_args": bad_flag}))[0]


def test_single_braces_in_checker_arguments(repo: RepoBuilder) -> None:
    args = {"checker_name": "RegexChecker", "pattern": "[0-9]{1,6}", "match_safe": False}
    [message] = problems(repo, repo.lve(test={"checker_args": args}))
    assert message == (
        f"error: {T}:6: checker_args.pattern: '{{1,6}}' is not a parameter name (write '{{{{' and '}}}}' "
        "for literal braces)"
    )


def test_placeholders_and_prompt_parameters(repo: RepoBuilder) -> None:
    lve_dir = repo.lve(test={"prompt": [{"content": "{a} and {c}"}], "prompt_parameters": ["a", "b"]})
    assert problems(repo, lve_dir) == [
        f"error: {T}:8: prompt[0].content: placeholder {{c}} is not listed in prompt_parameters",
    ]


def test_lambda_arguments_use_parameters(repo: RepoBuilder) -> None:
    """A LambdaChecker gets every parameter as a keyword argument: taking one is a use of it."""
    args = {"checker_name": "LambdaChecker", "func": "lambda r, location, comment: location in r"}
    lve_dir = repo.lve(
        test={
            "checker_args": args,
            "prompt": [{"content": "Hi"}],
            "prompt_parameters": ["location", "comment"],
        },
        instances={"i.jsonl": [instance("Paris", True, location="Paris", comment="c")]},
    )
    assert problems(repo, lve_dir, strict=True) == []
    number = {"checker_name": "NumberChecker", "expected_value_func": "lambda a, b: a * b"}
    lve_dir = repo.lve("d/number", {"checker_args": number, "prompt": [{"content": "Go."}]})
    assert problems(repo, lve_dir, strict=True) == []


def test_parameter_nothing_visibly_uses_is_a_warning(repo: RepoBuilder) -> None:
    args = {"checker_name": "LambdaChecker", "func": "lambda r, **params: r == 'ok'"}
    lve_dir = repo.lve(test={"checker_args": args, "prompt": [{"content": "{a}"}]})
    assert problems(repo, lve_dir) == [
        f"warning: {T}:13: prompt_parameters[1]: parameter 'b' is not used by any prompt or checker argument"
    ]
    assert problems(repo, lve_dir, strict=True)[0].startswith("error: ")
    custom = repo.lve(
        "d/custom",
        {"checker_args": {"checker_name": "MyChecker"}, "prompt": [{"content": "Hi"}]},
        files={
            "checker/checker.py": "from lvegit.checkers import BaseChecker\nclass MyChecker(BaseChecker):\n    pass\n"
        },
    )
    assert problems(repo, custom, strict=True) == []  # param_values may be read by the checker


def test_lambda_arguments_that_break_the_call_are_errors(repo: RepoBuilder) -> None:
    unknown = {"checker_name": "LambdaChecker", "func": "lambda r, a, b, c: True"}
    lve_dir = repo.lve(test={"checker_args": unknown})
    assert problems(repo, lve_dir) == [
        f"error: {T}:6: checker_args.func: lambda argument 'c' is neither the response nor a prompt parameter "
        "(prompt_parameters: a, b)"
    ]
    defaulted = {"checker_name": "LambdaChecker", "func": "lambda r, a, b, c=1: True"}
    assert problems(repo, repo.lve("d/default", {"checker_args": defaulted})) == []
    missing = {"checker_name": "MultiRunLambdaChecker", "func": "lambda rs, a: True"}
    runs = [{"name": "one", "prompt": [{"content": "{a}{b}"}]}]
    lve_dir = repo.lve("d/missing", {"checker_args": missing, "prompt": None, "multi_run_prompt": runs})
    assert problems(repo, lve_dir) == [
        "error: repository/d/missing/openai--gpt-4o-mini/test.json:6: checker_args.func: the lambda is called "
        "with every prompt parameter but takes no 'b': add it to its arguments (or end them with **kwargs)"
    ]
    no_response = {"checker_name": "LambdaChecker", "func": "lambda: True"}
    assert problems(repo, repo.lve("d/none", {"checker_args": no_response})) == [
        "error: repository/d/none/openai--gpt-4o-mini/test.json:6: checker_args.func: the lambda must take the "
        "response as its first argument"
    ]


def test_parameters_used_only_by_checker_arguments_count(repo: RepoBuilder) -> None:
    args = {"checker_name": "ExactMatchChecker", "pattern": "{secret}"}
    lve_dir = repo.lve(
        test={"checker_args": args, "prompt": [{"content": "hi"}], "prompt_parameters": ["secret"]},
        instances={"i.jsonl": [instance("no", True, secret="s3")]},
    )
    assert problems(repo, lve_dir) == []


def test_placeholder_in_plain_prompt_file_has_its_line(repo: RepoBuilder) -> None:
    lve_dir = repo.lve(
        test={"prompt": None, "prompt_file": "test.prompt"},
        files={"test.prompt": "Compute {a}\nplus {b}\nand {z}.\n"},
    )
    assert problems(repo, lve_dir) == [
        "error: repository/dummy/add/openai--gpt-4o-mini/test.prompt:3: content: placeholder {z} is not listed "
        "in prompt_parameters"
    ]


def test_prompt_file_problems(repo: RepoBuilder) -> None:
    missing = repo.lve(
        "d/missing", {"prompt": None, "prompt_file": "test.prompt", "prompt_parameters": [], **NO_PARAMETERS}
    )
    assert problems(repo, missing)[0].endswith("prompt_file: 'test.prompt' does not exist")
    outside = repo.lve(
        "d/outside",
        {"prompt": None, "prompt_file": "../../x.prompt", "prompt_parameters": [], **NO_PARAMETERS},
    )
    assert problems(repo, outside)[0].endswith(
        "prompt_file: '../../x.prompt' points outside the LVE directory"
    )
    broken = repo.lve(
        "d/broken",
        {"prompt": None, "prompt_file": "test.prompt", "prompt_parameters": [], **NO_PARAMETERS},
        files={"test.prompt": '{"content": "a"}\n{"content": "b"\n'},
    )
    assert problems(repo, broken) == [
        "error: repository/d/broken/openai--gpt-4o-mini/test.prompt:2: invalid JSON: Expecting ',' delimiter "
        "(line 2, column 16)"
    ]
    binary = repo.lve(
        "d/binary",
        {"prompt": None, "prompt_file": "test.prompt", "prompt_parameters": [], **NO_PARAMETERS},
        files={"test.prompt": b"\x89PNG\x00\x00"},
    )
    assert problems(repo, binary)[0].endswith(
        "prompt_file: binary content (NUL byte) where text was expected"
    )


def test_invalid_test_json_names_line_and_column(repo: RepoBuilder) -> None:
    lve_dir = repo.lve(raw_test='{\n  "description": "x",\n  "model": "m"\n  "prompt": []\n}')
    assert problems(repo, lve_dir) == [
        f"error: {T}:4: invalid JSON: Expecting ',' delimiter (line 4, column 3)"
    ]
    lve_dir = repo.lve("d/list", raw_test="[1, 2]")
    assert problems(repo, lve_dir)[0].endswith("test.json must hold one JSON object")


def test_model_folder_must_match_model(repo: RepoBuilder) -> None:
    lve_dir = repo.lve(folder="openai--gpt-4")
    assert problems(repo, lve_dir) == [
        "error: repository/dummy/add/openai--gpt-4/test.json:3: model: the LVE folder 'openai--gpt-4' does not "
        "match the model: expected 'openai--gpt-4o-mini'"
    ]


@pytest.mark.parametrize(
    ("folder", "model"),
    [
        ("microsoft--phi-1_5", "microsoft/phi-1_5"),
        ("microsoft--phi-15", "microsoft/phi-1_5"),
        ("openai--gpt-3.5-turbo", "openai/gpt-3.5-turbo"),
        ("openai--gpt-3-5-turbo", "openai/gpt-3.5-turbo"),
        ("openai--gpt-35-turbo", "gpt-3.5-turbo"),
        ("Meta--Llama-2-7b-chat", "meta/llama-2-7b-chat"),
    ],
)
def test_hand_made_model_folders_name_their_model(repo: RepoBuilder, folder: str, model: str) -> None:
    assert problems(repo, repo.lve(test={"model": model}, folder=folder)) == []


@pytest.mark.parametrize(
    ("folder", "model"),
    [
        ("openai--gpt-35-turbo", "openai/gpt-4"),
        ("openai--gpt-4", "openai/gpt-4o"),
        ("meta--llama-2-7b", "meta/llama-2-70b"),
        ("microsoft--phi-1_5", "microsoft/phi-2"),
    ],
)
def test_a_folder_that_names_another_model_is_an_error(repo: RepoBuilder, folder: str, model: str) -> None:
    [message] = problems(repo, repo.lve(test={"model": model}, folder=folder))
    assert f"model: the LVE folder '{folder}' does not match the model" in message


def test_tags(repo: RepoBuilder) -> None:
    tags = [
        {"name": "severity", "value": "critical"},
        {"name": "jailbreak", "value": "maybe"},
        {"name": "paper", "value": "https://arxiv.org/abs/1"},
        {"name": "mood", "value": "x"},
        {"value": 1},
    ]
    lve_dir = repo.lve(test={"tags": tags})
    assert problems(repo, lve_dir) == [
        f"error: {T}:18: tags[0].value: severity must be one of low, medium, high, not 'critical'",
        f"error: {T}:18: tags[1].value: jailbreak must be one of yes, no, not 'maybe'",
        f"error: {T}:18: tags[4].name: required field is missing",
        f"warning: {T}:18: tags[3].name: unknown tag 'mood'",
    ]


def test_unknown_keys_warn_and_strict_makes_them_errors(repo: RepoBuilder) -> None:
    lve_dir = repo.lve(test={"language": "en"})
    assert problems(repo, lve_dir) == [f"warning: {T}:25: language: unknown key 'language'"]
    assert problems(repo, lve_dir, strict=True) == [f"error: {T}:25: language: unknown key 'language'"]


def test_unfilled_placeholders(repo: RepoBuilder) -> None:
    lve_dir = repo.lve(
        test={
            "description": "<please fill in>",
            "checker_args": {"checker_name": "LambdaChecker", "func": "<please fill in>"},
        }
    )
    assert problems(repo, lve_dir) == [
        f"error: {T}:2: description: still holds the placeholder '<please fill in>': fill it in",
        f"error: {T}:6: checker_args.func: still holds the placeholder '<please fill in>': fill it in",
    ]


def test_instance_rules(repo: RepoBuilder) -> None:
    rows = [instance("3", True, a=1), instance({"x": "3"}, True, a=1, b=2)]
    lve_dir = repo.lve(
        instances={"i.jsonl": rows, "broken.json": '{"response": "1", "passed": true}\n{oops\n'}
    )
    assert problems(repo, lve_dir) == [
        "error: repository/dummy/add/openai--gpt-4o-mini/instances/broken.json:1: args.a: missing value for prompt "
        "parameter 'a'",
        "error: repository/dummy/add/openai--gpt-4o-mini/instances/broken.json:1: args.b: missing value for prompt "
        "parameter 'b'",
        "error: repository/dummy/add/openai--gpt-4o-mini/instances/broken.json:2: invalid JSON: Expecting property "
        "name enclosed in double quotes (line 2, column 2)",
        f"error: {INSTANCES}:1: args.b: missing value for prompt parameter 'b'",
        f"error: {INSTANCES}:2: response: the response has no value for variable(s) response",
    ]


MULTI_VARIABLE = [
    {"role": "user", "content": "{a}?"},
    {"role": "assistant", "variable": "first"},
    {"role": "user", "content": "{b}?"},
    {"role": "assistant", "variable": "second"},
]


def test_multi_variable_rules(repo: RepoBuilder) -> None:
    rows = [instance({"first": "1", "second": "2"}, True, a=1, b=2), instance("3", True, a=1, b=2)]
    lve_dir = repo.lve(
        test={"prompt": MULTI_VARIABLE, "checker_args": {"checker_name": "RefuseChecker"}},
        instances={"i.jsonl": rows},
    )
    assert problems(repo, lve_dir) == [
        f"error: {INSTANCES}:2: response: the prompt has 2 holes (first, second), so the response must be an object with "
        "one entry per variable"
    ]
    unnamed = [
        {"role": "user", "content": "{a}{b}"},
        {"role": "assistant"},
        {"role": "user", "content": "again"},
    ]
    lve_dir = repo.lve("d/unnamed", {"prompt": unnamed, "checker_args": {"checker_name": "RefuseChecker"}})
    assert problems(repo, lve_dir) == [
        "error: repository/d/unnamed/openai--gpt-4o-mini/test.json:7: prompt: with several assistant messages, "
        "each needs a 'variable' name"
    ]


def multi_run(**extra: Any) -> dict[str, Any]:
    return {
        "prompt": None,
        "multi_run_prompt": [
            {"name": "one", "repetitions": 2, "prompt": [{"content": "{a}+{b}"}], **extra},
            {"name": "two", "prompt": [{"content": "{b}+{a}"}]},
        ],
        "checker_args": {"checker_name": "MultiRunLambdaChecker", "func": "lambda rs, a, b: len(rs) == 3"},
    }


def test_multi_run_rules(repo: RepoBuilder) -> None:
    rows = [instance(["3", "3", "3"], True, a=1, b=2), instance(["3", "3"], True, a=1, b=2)]
    lve_dir = repo.lve(test=multi_run(), instances={"i.jsonl": rows})
    assert problems(repo, lve_dir) == [
        f"error: {INSTANCES}:2: response: must be a list with one entry per run (3 runs)"
    ]
    lve_dir = repo.lve("d/hint", multi_run(repetition=2))
    assert problems(repo, lve_dir) == [
        "warning: repository/d/hint/openai--gpt-4o-mini/test.json:19: multi_run_prompt[0].repetition: unknown key "
        "'repetition' (did you mean repetitions?)"
    ]
    wrong_checker = {**multi_run(), "checker_args": {"checker_name": "RefuseChecker"}}
    assert problems(repo, repo.lve("d/wrong", wrong_checker))[0].endswith(
        "checker_args.checker_name: this LVE's prompt form needs a multi-run checker (MultiRunBaseChecker); "
        "RefuseChecker is not one"
    )


def test_custom_checker_is_read_without_running_it(repo: RepoBuilder, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    code = (
        "import pathlib\n"
        f"pathlib.Path({str(marker)!r}).write_text('ran')\n"
        "from lvegit.checkers import BaseChecker\n"
        "class MyChecker(BaseChecker):\n"
        "    def __init__(self, needed, optional=1, *, kw_needed, kw_optional=2):\n"
        "        super().__init__()\n"
    )
    args = {"checker_name": "MyChecker", "needed": 1, "bogus": 2}
    lve_dir = repo.lve(test={"checker_args": args}, files={"checker/checker.py": code})
    assert problems(repo, lve_dir) == [
        f"error: {T}:4: checker_args: MyChecker needs the argument 'kw_needed'",
        f"error: {T}:7: checker_args.bogus: MyChecker takes no argument 'bogus'",
    ]
    assert not marker.exists()


def test_custom_checker_syntax_error_names_file_and_line(repo: RepoBuilder) -> None:
    lve_dir = repo.lve(
        test={"checker_args": {"checker_name": "MyChecker"}},
        files={"checker/checker.py": "class MyChecker(BaseChecker):\n    def is_safe(self\n"},
    )
    [message] = problems(repo, lve_dir)
    assert message.startswith(
        "error: repository/dummy/add/openai--gpt-4o-mini/checker:2: checker.py: syntax error"
    )


def test_json_report_shape(repo: RepoBuilder) -> None:
    lve_dir = repo.lve(test={"tags": [{"name": "severity", "value": "huge"}]})
    report = validate_lve(Repository(repo.root.resolve()), lve_dir)
    assert json.loads(json.dumps(report.as_json())) == {
        "path": "repository/dummy/add/openai--gpt-4o-mini",
        "valid": False,
        "errors": [
            {
                "severity": "error",
                "file": T,
                "field": "tags[0].value",
                "message": "severity must be one of low, medium, high, not 'huge'",
                "line": 18,
            }
        ],
        "warnings": [],
    }


def test_one_type_error_does_not_hide_the_others(repo: RepoBuilder) -> None:
    lve_dir = repo.lve(
        test={
            "model": 5,
            "description": ["not text"],
            "checker_args": {"checker_name": "LambdaChecker", "func": "lambda r, a, b: True"},
            "prompt": [{"content": "{a} {b} {c}"}],
            "tags": [{"name": "severity", "value": "extreme"}],
            "author": 7,
        },
        instances={"i.jsonl": [instance("3", True, a=1), instance(4, True, a=1, b=2)]},
    )
    assert problems(repo, lve_dir) == [
        f"error: {T}:2: description: must be a string, not a list",
        f"error: {T}:5: model: must be a string, not a number",
        f"error: {T}:19: tags[0].value: severity must be one of low, medium, high, not 'extreme'",
        f"error: {T}:25: author: must be a string, not a number",
        f"error: {T}:10: prompt[0].content: placeholder {{c}} is not listed in prompt_parameters",
        f"error: {INSTANCES}:1: args.b: missing value for prompt parameter 'b'",
        f"error: {INSTANCES}:2: response: must be a string, object or list, not a number",
    ]


def test_checker_arguments_no_instance_fills_take_no_parameters(repo: RepoBuilder) -> None:
    """Lambda source and other non-text arguments are taken as written: `{name}` in one is an error that
    says how to take the parameter instead; `{{` stays a literal brace."""
    templated = {"checker_name": "LambdaChecker", "func": "lambda r, a, b: r == '{a}' + '{{b}}'"}
    assert problems(repo, repo.lve(test={"checker_args": templated})) == [
        f"error: {T}:6: checker_args.func: {{a}}: a lambda's source is never filled from an instance's args "
        "(an instance line would rewrite the code); take the parameter as an argument instead, e.g. "
        "lambda r, a: ... (write '{{' and '}}' for literal braces)"
    ]
    braces = {"checker_name": "LambdaChecker", "func": "lambda r, a, b: r == '{{' + str(a + b) + '}}'"}
    assert problems(repo, repo.lve("d/braces", {"checker_args": braces})) == []
    tools = {"checker_name": "ToolCallChecker", "tools": "{a}"}
    assert (
        "error: repository/d/tools/openai--gpt-4o-mini/test.json:6: checker_args.tools: {a}: this argument is "
        "taken as written, never filled from an instance's args (write '{{' and '}}' for literal braces)"
    ) in problems(repo, repo.lve("d/tools", {"checker_args": tools}))


def test_a_pattern_that_would_take_gigabytes_to_compile_is_an_error_naming_it(repo: RepoBuilder) -> None:
    args = {"checker_name": "RegexChecker", "pattern": "(?:x{{3000}}){{3000}}", "match_safe": False}
    [message] = problems(repo, repo.lve(test={"checker_args": args}))
    assert "checker_args" in message and "repeats too much" in message, message
