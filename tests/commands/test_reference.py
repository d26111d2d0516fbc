"""The command reference says what `--help` says: every option with the default --help shows (none where
it shows none), and every example block as a code block, for every command and subcommand."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest

from lvegit.cli import cli as lvegit_cli
from lvegit.commands.reference import page, reference, text

PAGE = reference(lvegit_cli, "lvegit")


def sections() -> dict[str, str]:
    """The page's section of each command, by its path (`lvegit history add`)."""
    parts = re.split(r"^## (lvegit[^\n]*)\n", PAGE, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def command_paths() -> list[str]:
    found = []

    def walk(group: click.Group, ctx: click.Context) -> None:
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            assert command is not None
            sub = click.Context(command, info_name=name, parent=ctx)
            found.append(sub.command_path)
            if isinstance(command, click.Group):
                walk(command, sub)

    walk(lvegit_cli, click.Context(lvegit_cli, info_name="lvegit"))
    return found


def test_every_command_has_a_section_and_no_default_is_a_sentinel() -> None:
    assert list(sections()) == ["lvegit", *command_paths()]
    assert "Sentinel" not in PAGE and "UNSET" not in PAGE


@pytest.mark.parametrize("path", command_paths())
def test_each_options_default_is_the_one_help_shows(cli: Any, path: str) -> None:
    result = cli(*path.split()[1:], "--help")
    assert result.code == 0
    shown = " ".join(result.out.split("Options:", 1)[1].split())
    rows = re.findall(r"^\| `([^`]*)` \| (.*) \| (.*) \|$", sections()[path], flags=re.MULTILINE)
    assert rows, path
    starts = [shown.index(names.replace("\\|", "|")) for names, _text, _default in rows]
    assert starts == sorted(starts), path  # in the order --help lists them
    for (names, _text, default), start, end in zip(rows, starts, [*starts[1:], len(shown)], strict=True):
        segment = shown[start:end]
        found = re.search(r"\[(?:[^\]]*; )?default: ([^\];]*)", segment)
        unescaped = default.replace("\\|", "|").replace("\\_", "_")  # markdown's escapes
        assert (found.group(1).strip() if found else "") == unescaped, (
            path,
            names,
            segment,
        )


@pytest.mark.parametrize("path", command_paths())
def test_each_example_block_is_a_code_block(cli: Any, path: str) -> None:
    help_text = cli(*path.split()[1:], "--help").out
    examples = re.search(r"^  Examples:\n((?:    .*\n)+)", help_text, flags=re.MULTILINE)
    if examples is None:
        pytest.skip(f"{path} shows no examples")
    lines = [line.strip() for line in examples.group(1).splitlines()]
    assert "Examples:\n\n```text\n" + "\n".join(lines) + "\n```" in sections()[path]


def test_the_committed_page_is_the_generated_one() -> None:
    """docs/reference.md is committed whole (an empty stub on GitHub once, filled in only by a docs hook)."""
    committed = (Path(__file__).parents[2] / "docs/reference.md").read_text(encoding="utf-8")
    assert committed == page(lvegit_cli), (
        "docs/reference.md is stale: python -m lvegit.commands.reference docs/reference.md"
    )


def test_the_documented_command_writes_the_page(tmp_path: Path) -> None:
    """`python -m lvegit.commands.reference FILE` (docs/development.md names it) writes the CLI's page."""
    written = tmp_path / "reference.md"
    subprocess.run(
        [sys.executable, "-m", "lvegit.commands.reference", str(written)], check=True, cwd=tmp_path
    )
    assert written.read_text(encoding="utf-8") == page(lvegit_cli)


def test_help_text_outside_code_is_escaped_for_markdown() -> None:
    """`<NAME>` in help was raw HTML that the page swallowed; `*` would start emphasis."""
    assert text("repository/NAME/<model-folder>/ and INPUT_* in `a <b> *c*`") == (
        "repository/NAME/&lt;model-folder&gt;/ and INPUT\\_\\* in `a <b> *c*`"
    )
    assert "Fill in every '&lt;please fill in&gt;' placeholder" in sections()["lvegit new"]
