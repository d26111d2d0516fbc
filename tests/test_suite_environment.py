"""The suite sets the environment it needs (tests/conftest.py) instead of reading the caller's."""

from __future__ import annotations

import os
import subprocess
import sys

from builders import PROJECT_ROOT


def test_the_callers_variables_do_not_reach_the_tests() -> None:
    for name in ("OPENAI_API_KEY", "GITHUB_ACTIONS", "NO_COLOR", "COLUMNS", "LVEGIT_CACHE", "GIT_DIR",
                 "TRANSFORMERS_OFFLINE", "HF_ENDPOINT", "HTTP_PROXY", "https_proxy", "NO_PROXY"):  # fmt: skip
        assert name not in os.environ, name
    assert os.environ["HF_HUB_OFFLINE"] == "1" and os.environ["TERM"] == "xterm-256color"


def passes_under(callers: dict[str, str], tests: list[str]) -> None:
    """Each of `tests` passes in a pytest of its own, with the caller's variables `callers` set."""
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-o", "addopts=", "-q", "-p", "no:cacheprovider", *tests],
        cwd=PROJECT_ROOT,
        env={**os.environ, **callers},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
    assert f"{len(tests)} passed" in ran.stdout


def test_tests_pass_under_a_callers_hostile_environment() -> None:
    """Run as an offline CI machine in GitHub Actions would run them (HF_HUB_OFFLINE once failed a hub test;
    GITHUB_ACTIONS adds a warning to every command; NO_COLOR and TERM=dumb change a terminal's output)."""
    hostile = {
        "GITHUB_ACTIONS": "true",
        "HF_HUB_OFFLINE": "0",
        "NO_COLOR": "1",
        "TERM": "dumb",
        "COLUMNS": "20",
        "OPENAI_API_KEY": "sk-callers-real-key",
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
        "LVEGIT_CACHE": "off",
    }
    tests = [
        "tests/commands/test_show_command.py::test_colours_on_a_terminal_only_and_never_with_no_color",
        "tests/test_cli.py::test_in_github_actions_an_unreleased_lvegit_says_to_pin_a_release",
        "tests/commands/test_run_command.py::test_a_run_that_stops_before_its_first_attempt_leaves_no_report",
        "tests/test_suite_environment.py::test_the_callers_variables_do_not_reach_the_tests",
    ]
    passes_under(hostile, tests)


def test_the_hub_tests_pass_whatever_hub_transformers_and_proxy_variables_the_caller_set() -> None:
    """HF_HUB_OFFLINE=1 (an offline CI's usual setting) once failed a hub test, which inherited it;
    TRANSFORMERS_OFFLINE=1 and HTTP_PROXY did the same: the loopback hub was never asked. (The test above
    sets HF_HUB_OFFLINE=0; an empty value is removed by its prefix as any other.)"""
    callers = {
        "HF_HUB_OFFLINE": "1",
        "HF_ENDPOINT": "http://127.0.0.1:9",
        "HF_HUB_DISABLE_XET": "",
        "TRANSFORMERS_OFFLINE": "1",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "http_proxy": "http://127.0.0.1:9",
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "NO_PROXY": "",
    }
    tests = [
        "tests/checkers/test_hub.py::test_models_downloads_what_checkers_asked_for_and_they_then_run",
        "tests/test_suite_environment.py::test_the_callers_variables_do_not_reach_the_tests",
    ]
    passes_under(callers, tests)
