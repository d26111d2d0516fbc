from __future__ import annotations

import subprocess
import sys

import pytest

from lvegit import __version__
from lvegit.cli import cli as cli_group
from lvegit.commands.catalog import COMMANDS as CATALOG

from builders import PROJECT_ROOT, RepoBuilder

COMMANDS = sorted(CATALOG)


def test_commands_are_registered() -> None:
    assert COMMANDS == [
        "action",
        "changed",
        "check",
        "disclosure",
        "export",
        "history",
        "ids",
        "import",
        "list",
        "models",
        "new",
        "readme",
        "record",
        "replay",
        "report",
        "run",
        "sandbox",
        "schema",
        "show",
        "site",
        "status",
        "validate",
    ]


@pytest.mark.parametrize("name", COMMANDS)
def test_catalog_matches_each_command(name: str) -> None:
    import click

    command = cli_group.get_command(click.Context(cli_group), name)
    assert command is not None and command.name == name
    assert command.get_short_help_str(limit=200) == CATALOG[name][2]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_with_an_example(cli, command: str) -> None:
    result = cli(command, "--help")
    assert result.code == 0
    assert "Examples:" in result.out
    assert f"lvegit {command}" in result.out


def test_group_help_and_version(cli) -> None:
    result = cli("--help")
    assert result.code == 0 and "Examples:" in result.out
    assert all(command in result.out for command in COMMANDS)
    assert cli("--version").out == f"lvegit, version {__version__}\n"


def test_unknown_command_is_usage_error(cli) -> None:
    result = cli("frobnicate")
    assert result.code == 2 and "No such command 'frobnicate'" in result.err
    assert "Did you mean" not in result.err  # nothing close


@pytest.mark.parametrize("group", [[], ["history"], ["import"]])
def test_a_group_without_a_command_shows_its_help(cli, group: list[str]) -> None:
    result = cli(*group)
    assert (result.code, result.err) == (0, "")
    assert result.out == cli(*group, "--help").out


@pytest.mark.parametrize(
    ("words", "meant"),
    [
        (["chek"], "check"),
        (["valdate"], "validate"),
        (["history", "lsit"], "list"),
        (["import", "garrak"], "garak"),
    ],
)
def test_a_mistyped_command_gets_the_one_it_probably_meant(cli, words: list[str], meant: str) -> None:
    result = cli(*words)
    assert result.code == 2 and f"No such command '{words[-1]}'. Did you mean '{meant}'?" in result.err


def test_a_repo_option_that_names_no_repository_says_so(cli, tmp_path) -> None:
    result = cli("check", "--all", "--repo", str(tmp_path))
    assert result.code == 2
    assert (
        f"--repo {tmp_path}: not an LVE repository (it holds neither .lverepo nor repository/)" in result.err
    )
    assert "pass --repo" not in result.err


def test_unexpected_error_exits_3_with_trace(repo: RepoBuilder, cli, monkeypatch: pytest.MonkeyPatch) -> None:
    repo.lve()

    def explode(*args: object, **kwargs: object) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr("lvegit.commands.validate.validate_lve", explode)
    result = cli("validate", "--all", cwd=repo.root)
    assert result.code == 3
    assert "unexpected error" in result.err and "RuntimeError: disk on fire" in result.err


def test_python_dash_m_entry_point(repo: RepoBuilder) -> None:
    repo.lve()
    process = subprocess.run(
        [sys.executable, "-m", "lvegit", "validate", "--all", "--repo", str(repo.root)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert process.returncode == 0, process.stderr
    assert process.stdout.endswith("1 LVE: 1 valid, 0 invalid\n")


def test_in_github_actions_an_unreleased_lvegit_says_to_pin_a_release(
    repo: RepoBuilder, cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A template of examples/workflows/ run unchanged runs lvegit from main: every run says so, as a warning
    annotation with what to replace; a release says nothing."""
    import lvegit.cli

    repo.lve()
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setattr(lvegit.cli, "__version__", "0.0.0")  # the Action's image built from main
    warned = cli("list", cwd=repo.root)
    assert warned.code == 0
    assert warned.err.startswith("::warning title=lvegit 0.0.0 is not a release::")
    assert "`uses: lvegit/lvegit@main`" in warned.err and "#pinning-lvegit" in warned.err
    monkeypatch.setattr(lvegit.cli, "__version__", "0.2.0")
    assert cli("list", cwd=repo.root).err == ""
    monkeypatch.delenv("GITHUB_ACTIONS")
    monkeypatch.setattr(lvegit.cli, "__version__", "0.0.0")
    assert cli("list", cwd=repo.root).err == ""


def test_the_workflow_templates_pin_nothing_that_looks_real_and_mark_what_to_replace() -> None:
    """They once pinned lvegit==0.1.0 and an action commit 0123456789abcdef... that do not exist."""
    import re

    for template in (PROJECT_ROOT / "examples/workflows").glob("*.yml"):
        text = template.read_text()
        assert "0123456789abcdef" not in text and "0.1.0" not in text, template.name
        for line in text.splitlines():
            if re.search(r"lvegit/lvegit@|pip install .*lvegit", line):
                assert "lvegit@main" in line and "REPLACE main: see docs/action.md#pinning-lvegit" in line, (
                    line
                )
    assert "## Pinning lvegit" in (PROJECT_ROOT / "docs/action.md").read_text()


def test_a_missing_choice_lists_the_choices_without_escaped_tabs(cli) -> None:
    """`lvegit schema` without KIND once printed each choice after a literal `\\t`."""
    result = cli("schema")
    assert result.code == 2 and "\\t" not in result.err
    assert "Choose from:\n    test,\n    instance," in result.err


def test_an_absolute_lve_path_outside_the_current_folder_is_read_in_its_own_repository(
    repo: RepoBuilder, cli, tmp_path
) -> None:
    """`lvegit show /elsewhere/repository/...` once looked for a repository above the current folder."""
    lve_dir = repo.lve()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shown = cli("show", str(lve_dir), cwd=elsewhere)
    assert shown.code == 0, shown.err
    assert shown.out.splitlines()[0] == "repository/dummy/add/openai--gpt-4o-mini"
    validated = cli("validate", str(lve_dir / "test.json"), cwd=elsewhere)
    assert validated.code == 0 and validated.out.splitlines()[-1] == "1 LVE: 1 valid, 0 invalid"
    other = RepoBuilder(tmp_path / "other")
    other.lve("cat/other")
    inside_another = cli("validate", str(lve_dir), cwd=other.root)  # not the current folder's repository
    assert inside_another.out.splitlines()[-1] == "1 LVE: 1 valid, 0 invalid"
    assert "repository/dummy/add" in inside_another.out and "cat/other" not in inside_another.out
