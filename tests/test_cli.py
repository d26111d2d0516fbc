from __future__ import annotations

import subprocess
import sys

import pytest

from lvegit import __version__
from lvegit.cli import cli as cli_group
from lvegit.commands.catalog import COMMANDS as CATALOG

from builders import RepoBuilder

COMMANDS = sorted(CATALOG)


def test_commands_are_registered() -> None:
    assert COMMANDS == [
        "action",
        "changed",
        "check",
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
