"""What the docs say about the tool, checked against the tool where a claim can be checked."""

from __future__ import annotations

import re
from typing import Any

import click

from lvegit.cli import cli as lvegit_cli
from lvegit.commands.schema import DOCUMENTS
from lvegit.publish.schema import KINDS

from builders import PROJECT_ROOT

PAGES = {
    path.name: path.read_text()
    for path in [PROJECT_ROOT / "README.md", *(PROJECT_ROOT / "docs").glob("*.md")]
}


def json_commands() -> list[str]:
    """The commands whose --format offers json."""
    ctx = click.Context(lvegit_cli, info_name="lvegit")
    found = []
    commands = [(name, lvegit_cli.get_command(ctx, name)) for name in lvegit_cli.list_commands(ctx)]
    for group, grouped in list(commands):  # and each group's commands (`history list`), by group name
        if isinstance(grouped, click.Group):
            commands += [(group, grouped.get_command(ctx, name)) for name in grouped.list_commands(ctx)]
    for name, command in commands:
        assert command is not None
        formats = [
            p for p in command.params if p.name == "output_format" and isinstance(p.type, click.Choice)
        ]
        if formats and "json" in formats[0].type.choices:
            found.append(name)
    return found


def test_every_json_output_is_a_versioned_document_that_schema_prints() -> None:
    """The docs say every --format json output is a versioned document with a schema (guide, getting
    started); they once said three of them were not versioned."""
    assert "Every `--format json` output is a versioned document" in PAGES["guide.md"]
    for command in json_commands():
        assert command in DOCUMENTS or command == "report", command  # report prints a run document
    for name, text in PAGES.items():
        assert "not versioned" not in text, name


def test_the_schema_commands_help_names_every_kind(cli: Any) -> None:
    shown = cli("schema", "--help").out.split("KIND is one of:", 1)[1].split("The schema says", 1)[0]
    named = set(re.findall(r"[a-z]+", shown))
    assert {*KINDS, *DOCUMENTS} <= named


def install_block(page: str) -> str:
    found = re.search(r"```bash\n(pip install \"lvegit @ git\+.*?)```", PAGES[page], re.DOTALL)
    assert found, page
    return found[1]


def test_the_install_lists_agree_and_install_what_exists_today() -> None:
    """They once said `pip install lvegit`, which finds no distribution before a release, and getting
    started left out the data extra that status, history, OSV and datasets need."""
    import tomllib

    assert install_block("README.md") == install_block("getting-started.md")
    extras = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for extra in set(extras) - {"test", "docs"}:
        assert f'"lvegit[{extra}] @ git+https://github.com/lvegit/lvegit"' in install_block("README.md"), (
            extra
        )
    for name, text in PAGES.items():
        for block in re.findall(r"```(?:bash|console)\n(.*?)```", text, re.DOTALL):
            for line in block.splitlines():
                if re.search(r"pip install [^&|#]*\blvegit\b", line):
                    assert "git+https://github.com/lvegit/lvegit" in line, (name, line)
    assert "pip install -e '.[docs]' && mkdocs serve" in PAGES["README.md"]


def test_every_pin_the_docs_and_templates_give_exists_or_is_marked_to_replace() -> None:
    """The pre-commit snippet pinned `rev: v0.1.0`, a tag that does not exist: `pre-commit run` stopped
    with "pathspec 'v0.1.0' did not match". A pin is a commit, a tag of this repository, or `main` marked
    `REPLACE main` on its line with where to find the value."""
    import subprocess

    tags = set(
        subprocess.run(["git", "tag", "-l"], cwd=PROJECT_ROOT, capture_output=True, text=True).stdout.split()
    )
    texts = {
        name: "\n".join(re.findall(r"```\w*\n(.*?)```", text, re.DOTALL)) for name, text in PAGES.items()
    }
    for path in [*PROJECT_ROOT.glob("examples/workflows/*.yml"), PROJECT_ROOT / ".pre-commit-hooks.yaml"]:
        texts[path.name] = path.read_text()
    pins = 0
    for name, text in texts.items():
        for line in text.splitlines():
            for ref in re.findall(r"(?:\brev:\s*|lvegit/lvegit@)([^\s\"'#]+)", line):
                pins += 1
                marked = ref == "main" and "REPLACE main" in line and "pinning-lvegit" in line
                assert re.fullmatch(r"[0-9a-f]{40}", ref) or ref in tags or marked, (name, line)
    assert pins >= 10
