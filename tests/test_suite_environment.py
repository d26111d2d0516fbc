"""The suite sets the environment it needs (tests/conftest.py) instead of reading the caller's."""

from __future__ import annotations

import os
import subprocess
import sys

from builders import PROJECT_ROOT


def test_the_callers_variables_do_not_reach_the_tests() -> None:
    for name in ("OPENAI_API_KEY", "GITHUB_ACTIONS", "NO_COLOR", "COLUMNS", "LVEGIT_CACHE", "GIT_DIR"):
        assert name not in os.environ, name
    assert os.environ["HF_HUB_OFFLINE"] == "1" and os.environ["TERM"] == "xterm-256color"


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
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-o", "addopts=", "-q", "-p", "no:cacheprovider", *tests],
        cwd=PROJECT_ROOT,
        env={**os.environ, **hostile},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
    assert "4 passed" in ran.stdout
