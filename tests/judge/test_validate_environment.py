"""Validation of environment LVEs: every problem of the state, the code (read as syntax trees, nothing runs)
and the records names its file, field and line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lvegit.judge.validate import validate_lve
from lvegit.lve.repo import Repository

from builders import ENVIRONMENT_FILES, ENVIRONMENT_TEST, RepoBuilder, instance

LVE = "repository/agents/bank/openai--gpt-4o-mini"
STATE = f"{LVE}/environment/state.json"


def problems(repo: RepoBuilder, lve_dir: Path) -> list[str]:
    report = validate_lve(Repository(repo.root.resolve()), lve_dir)
    return [p.render() for p in (*report.errors, *report.warnings)]


def bank(repo: RepoBuilder, test: dict[str, Any] | None = None, **files: str | None) -> Path:
    """builders' bank with test.json keys and environment files replaced (None: left out)."""
    given = {
        **ENVIRONMENT_FILES,
        **{f"environment/{name.replace('_', '.', 1)}": text for name, text in files.items()},
    }
    return repo.lve(
        "agents/bank",
        {**ENVIRONMENT_TEST, **(test or {})},
        files={path: text for path, text in given.items() if text is not None},
    )


def test_the_bank_is_valid(repo: RepoBuilder) -> None:
    assert problems(repo, bank(repo)) == []


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (
            {"state_json": '{"balance": 1,\n "files": }'},
            f"error: {STATE}:2: invalid JSON: Expecting value (line 2, column 11)",
        ),
        ({"state_json": "[1, 2]"}, f"error: {STATE}: must be a JSON object"),
        ({"state_json": None}, f"error: {STATE}: {{}} is missing: the environment's initial state"),
        (
            {"state_json": json.dumps({"files": {"a.txt": "pay {attacker}"}})},
            f"error: {STATE}: files.a.txt: {{attacker}} is neither an injection (environment.injections in "
            "test.json) nor a prompt parameter",
        ),
        (
            {"state_json": json.dumps({"note": '{"id": 7}'})},
            f'error: {STATE}: note: {{"id"}} is neither an injection (environment.injections in test.json) '
            "nor a prompt parameter (write '{{' and '}}' for literal braces)",
        ),
        (
            {"tools_py": None},
            f"error: {LVE}/environment: environment/tools.py is missing: the tools' code",
        ),
        (
            {"tools_py": "def read_file(state, path):\n    return (\n"},
            f"error: {LVE}/environment/tools.py:2: syntax error: '(' was never closed",
        ),
    ],
    ids=["bad-json", "not-object", "missing", "unknown-injection", "json-braces", "no-tools", "syntax"],
)
def test_a_broken_environment_names_where(
    repo: RepoBuilder, files: dict[str, str | None], expected: str
) -> None:
    expected = expected.replace("{} is missing", "environment/state.json is missing")
    assert expected in problems(repo, bank(repo, **files))


def test_a_syntax_error_in_the_checks_is_the_only_error(repo: RepoBuilder) -> None:
    """It once came with a second, misleading one: "function security, which is not there"."""
    broken = bank(repo, checks_py="def security(output, before, after, calls):\n    return (\n")
    assert problems(repo, broken) == [
        f"error: {LVE}/environment/checks.py:2: syntax error: '(' was never closed"
    ]


def test_a_tool_without_returns_needs_a_function(repo: RepoBuilder) -> None:
    tools = ENVIRONMENT_FILES["environment/tools.py"].replace("def get_balance(", "def balance(")
    assert problems(repo, bank(repo, tools_py=tools)) == [
        f"error: {LVE}/test.json:20: tools[2].returns: get_balance has no returns and environment/tools.py "
        "defines no function get_balance: say what a call returns, or write the function"
    ]


def test_environment_checker_needs_the_security_check(repo: RepoBuilder) -> None:
    checks = "def utility(output, before, after, calls):\n    return True\n"
    assert problems(repo, bank(repo, checks_py=checks)) == [
        f"error: {LVE}/test.json:5: checker_args.checker_name: EnvironmentChecker judges with "
        "environment/checks.py's function security, which is not there"
    ]
    plain = repo.lve("agents/plain", {"checker_args": {"checker_name": "EnvironmentChecker"}})
    assert problems(repo, plain)[0].endswith(
        "checker_args.checker_name: EnvironmentChecker judges an environment: declare one"
    )


def test_an_environment_needs_one_prompt(repo: RepoBuilder) -> None:
    runs = {"prompt": None, "multi_run_prompt": [{"name": "a", "prompt": [{"content": "Pay the bill."}]}]}
    assert any(
        p.endswith("environment: an environment needs a prompt or prompt_file, not multi_run_prompt")
        for p in problems(repo, bank(repo, runs))
    )


def test_an_undeclared_environment_folder_and_unrecorded_states_are_named(repo: RepoBuilder) -> None:
    lve_dir = repo.lve("dummy/add", files={"environment/state.json": "{}"})
    assert problems(repo, lve_dir) == [
        "warning: repository/dummy/add/openai--gpt-4o-mini/environment: environment/ is not used: test.json "
        "declares no environment"
    ]
    lve_dir = bank(repo)
    (lve_dir / "instances").mkdir()
    (lve_dir / "instances/i.jsonl").write_text(json.dumps(instance("The bill is paid.", True)) + "\n")
    assert problems(repo, lve_dir) == [
        f"error: {LVE}/instances/i.jsonl:1: environment: an environment LVE's instance records the state "
        "before and after its tool calls: record it again with lvegit record"
    ]
