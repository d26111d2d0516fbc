"""The LVEGIT_* environment is read in one place, into the settings, and a child process gets them as a flag."""

from __future__ import annotations

import os
import re
from typing import Any

import pytest

from lvegit.base.settings import ENVIRONMENT, CacheSettings, CheckerSettings, RetryPolicy, Settings

from builders import PROJECT_ROOT, RepoBuilder, instance


def test_the_docs_list_every_variable() -> None:
    page = (PROJECT_ROOT / "docs/getting-started.md").read_text()
    assert set(re.findall(r"^\| `(LVEGIT_\w+)` \|", page, re.MULTILINE)) == ENVIRONMENT.keys()


def test_each_variable_sets_its_field() -> None:
    settings = Settings.from_environment(
        {
            "LVEGIT_CACHE": "read",
            "LVEGIT_CACHE_DIR": "/tmp/verdicts",
            "LVEGIT_CHECKER_LOAD_TIMEOUT": "300",
            "LVEGIT_CHECKER_TIMEOUT": "2.5",
            "LVEGIT_CHECKER_LVE_BUDGET": "60",
            "LVEGIT_CHECKER_BUDGET": "600",
            "LVEGIT_ALLOW_DOWNLOADS": "1",
            "LVEGIT_SPACY_MODEL": "en_core_web_lg",
            "LVEGIT_TRUSTED_MODEL_DIRS": "/models:/srv/models",
            "LVEGIT_UNCONFINED_CHECKERS": "1",
            "UNRELATED": "x",
        }
    )
    assert settings.cache == CacheSettings("read", "/tmp/verdicts")
    assert settings.checkers == CheckerSettings(
        load_timeout=300.0,
        call_timeout=2.5,
        lve_budget=60.0,
        command_budget=600.0,
        allow_downloads=True,
        spacy_model="en_core_web_lg",
        trusted_model_dirs="/models:/srv/models",
        allow_unconfined=True,
    )
    assert Settings.from_environment({}) == Settings()
    assert Settings.from_environment({"LVEGIT_CACHE": "", "LVEGIT_CHECKER_TIMEOUT": ""}) == Settings()


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("LVEGIT_CACHE", "sometimes", "LVEGIT_CACHE must be one of on, read, off, not 'sometimes'"),
        (
            "LVEGIT_CHECKER_TIMEOUT",
            "soon",
            "LVEGIT_CHECKER_TIMEOUT must be a number of seconds above 0, not 'soon'",
        ),
        (
            "LVEGIT_CHECKER_LOAD_TIMEOUT",
            "-1",
            "LVEGIT_CHECKER_LOAD_TIMEOUT must be a number of seconds above 0, not '-1'",
        ),
    ],
)
def test_a_bad_value_is_a_usage_error_naming_the_variable(
    variable: str, value: str, message: str, repo: RepoBuilder, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo.lve(instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    monkeypatch.setenv(variable, value)
    result = cli("check", "--all", cwd=repo.root)
    assert (result.code, result.err) == (2, f"lvegit: error: {message}\n")


def test_the_child_flag_carries_every_setting_but_the_retry_policy_and_the_command_line() -> None:
    settings = Settings(
        argv=("replay", "--all"),
        cache=CacheSettings("read", "/cache"),
        checkers=CheckerSettings(1.0, 2.0, True, "pipeline"),
        git_environment=(("GIT_CONFIG_COUNT", "1"),),
    )
    retry = RetryPolicy(attempts=2)
    assert Settings.from_flag(settings.as_flag(), retry=retry) == Settings(
        retry=retry,
        cache=settings.cache,
        checkers=settings.checkers,
        git_environment=settings.git_environment,
    )


def test_a_malformed_settings_flag_is_a_usage_error(cli: Any) -> None:
    result = cli("--settings-json", '{"cache": 1}', "list")
    assert result.code == 2 and result.err.startswith("lvegit: error: --settings-json is not what a parent")


def test_a_command_reads_the_environment_and_changes_none_of_it(
    repo: RepoBuilder, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo.lve(instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    monkeypatch.setenv("LVEGIT_CACHE", "off")
    before = dict(os.environ)
    assert cli("check", "--all", cwd=repo.root).code == 0
    assert not (repo.root / ".lvegit-cache").exists()  # read once, and obeyed
    assert dict(os.environ) == before
