"""The JSON Schemas of test.json and of an instance line: shipped as generated, valid draft 2020-12, true of
the bundled repository and the public samples, and never stricter than `lvegit validate`."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from lvegit.judge.validate import validate_lve
from lvegit.lve.repo import Repository
from lvegit.publish import schema as lve_schema

from builders import BASIC_TEST, PROJECT_ROOT, SAMPLES, RepoBuilder, instance, public_format

TEST_SCHEMA = json.loads(lve_schema.shipped("test"))
INSTANCE_SCHEMA = json.loads(lve_schema.shipped("instance"))


def accepts(schema: dict[str, Any], document: Any) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(document)


@pytest.mark.parametrize("kind", lve_schema.KINDS)
def test_the_shipped_schemas_are_the_generated_ones(kind: str) -> None:
    shipped = json.loads(lve_schema.shipped(kind))
    assert shipped == lve_schema.generated(kind), "regenerate them: python -m lvegit.publish.schema"
    jsonschema.Draft202012Validator.check_schema(shipped)


# The bundled repository, this project's LVEs in the public repository's format, and the real samples
# where they are beside the checkout (read there, never copied).
ROOTS = ["bundled", "public-format", *(["samples"] if SAMPLES.is_dir() else [])]


@pytest.mark.parametrize("kind", ROOTS)
def test_real_repositories_fit_the_schemas(kind: str, tmp_path: Path) -> None:
    root = {"bundled": PROJECT_ROOT, "samples": SAMPLES}.get(kind) or public_format(tmp_path / "lves")
    tests = sorted((root / "repository").rglob("test.json"))
    assert tests
    for path in tests:
        assert accepts(TEST_SCHEMA, json.loads(path.read_text())), path
        for instances in sorted((path.parent / "instances").glob("*.json*")):
            for line in instances.read_text().splitlines():
                assert not line.strip() or accepts(INSTANCE_SCHEMA, json.loads(line)), instances


def changed(**changes: Any) -> dict[str, Any]:
    test = copy.deepcopy(BASIC_TEST)
    for key, value in changes.items():
        if value is KeyError:
            test.pop(key, None)
        else:
            test[key] = value
    return test


PROMPT_FILE = {"test.prompt": "Compute {a} + {b}.\n"}
REGEX = {"checker_name": "RegexChecker", "pattern": "x", "match_safe": False}
ROW = instance("3", True, a=1, b=2)

# (test.json, extra files, an instance): validate accepts each; the schema must too.
VALID = [
    (changed(), {}, ROW),
    (changed(prompt=None, prompt_file="test.prompt"), PROMPT_FILE, ROW),
    (
        changed(prompt=KeyError, prompt_file="plain.prompt", prompt_parameters=None, checker_args=REGEX),
        {"plain.prompt": "Say hello.\n"},
        instance("hello", True),
    ),
    (
        changed(unknown_key=1, tags=[{"name": "paper", "value": "arXiv"}, {"name": "mine", "value": 3}]),
        {},
        ROW,
    ),
    (changed(prompt=[{"content": "Compute {a} + {b}.", "note": "an unknown message key"}]), {}, ROW),
    (
        changed(
            prompt=[
                {"role": "system", "content": "Be brief."},
                {"content": "Compute {a} + {b}."},
                {"role": "assistant", "content": None, "variable": "first"},
                {"content": "Sure?"},
            ]
        ),
        {},
        instance({"first": "3", "response": "yes"}, True, a=1, b=2),
    ),
    (
        changed(
            prompt=KeyError,
            multi_run_prompt=[
                {"name": "one", "prompt": [{"content": "Compute {a} + {b}."}]},
                {"name": "two", "repetitions": 2, "prompt_file": "test.prompt", "prompt": None},
            ],
            checker_args={"checker_name": "MultiRunLambdaChecker", "func": "lambda rs, a, b: True"},
        ),
        PROMPT_FILE,
        instance(["3", "3", "3"], True, a=1, b=2),
    ),
    (changed(author=None, default_model_args={"temperature": 0.5, "max_tokens": 10}), {}, ROW),
    (
        changed(checker_args={"checker_name": "RegexChecker", "pattern": "[0-9]{{1,3}}", "match_safe": True}),
        {},
        ROW,
    ),
    (
        changed(
            prompt_parameters=["a", "b", "phone-number"],
            checker_args={"checker_name": "LambdaChecker", "func": "lambda r, **values: True"},
        ),
        {},
        instance("3", True, a=1, b=2, **{"phone-number": "555"}),
    ),
]

# (test.json, what validate says): the schema refuses each too.
INVALID = [
    (changed(description=KeyError), "description"),
    (changed(description="  "), "description"),
    (changed(prompt_file="test.prompt"), "exactly one of prompt"),
    (changed(prompt=KeyError), "exactly one of prompt"),
    (changed(prompt=[]), "prompt: must not be empty"),
    (changed(prompt=[{"role": "robot", "content": "x"}]), "role: must be one of"),
    (changed(prompt=[{"role": "user", "content": None}]), "needs content"),
    (changed(checker_args={"checker_name": "RegexChecker", "pattern": "x"}), "match_safe"),
    (changed(checker_args={"pattern": "x"}), "checker_name"),
    (changed(tags=[{"name": "severity", "value": "extreme"}]), "severity must be one of"),
    (changed(prompt_parameters=["a", "a"]), "listed twice"),
    (changed(prompt_parameters=["a b"]), "must be a parameter name"),
    (
        changed(
            prompt=KeyError, multi_run_prompt=[{"name": "x", "repetitions": 0, "prompt": [{"content": "c"}]}]
        ),
        "repetitions",
    ),
    (changed(author=7), "author"),
]


def validate(
    repo: RepoBuilder, test: dict[str, Any], files: dict[str, str], row: dict[str, Any] = ROW
) -> list[str]:
    lve_dir = repo.lve(raw_test=json.dumps(test), files=files, instances={"i.jsonl": [row]})
    report = validate_lve(Repository.discover(repo.root), lve_dir, False)
    return [f"{p.field}: {p.message}" for p in report.errors]


@pytest.mark.parametrize(("test", "files", "row"), VALID)
def test_the_schema_accepts_what_validate_accepts(
    repo: RepoBuilder, test: dict[str, Any], files: dict[str, str], row: dict[str, Any]
) -> None:
    assert validate(repo, test, files, row) == []
    assert accepts(TEST_SCHEMA, test)


@pytest.mark.parametrize(("test", "says"), INVALID)
def test_the_schema_refuses_what_it_can_express(repo: RepoBuilder, test: dict[str, Any], says: str) -> None:
    errors = validate(repo, test, {})
    assert any(says in error for error in errors), errors
    assert not accepts(TEST_SCHEMA, test)


def test_instance_lines(repo: RepoBuilder) -> None:
    good = [
        instance("3", True, a=1),
        {"response": {"first": "x"}},
        {"response": ["a", "b"], "passed": False, "extra": 1},
    ]
    bad = [
        {"passed": True},
        {"response": 3},
        {"response": "x", "passed": "yes"},
        {"response": "x", "args": []},
    ]
    assert all(accepts(INSTANCE_SCHEMA, line) for line in good)
    assert not any(accepts(INSTANCE_SCHEMA, line) for line in bad)


def test_the_command_prints_the_shipped_schema(cli: Any) -> None:
    for kind in lve_schema.KINDS:
        result = cli("schema", kind)
        assert (result.code, result.out) == (0, lve_schema.shipped(kind))
    assert cli("schema", "other").code == 2
