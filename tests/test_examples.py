"""Every `lvegit ...` example of the README and of each command's --help runs on the bundled repository:
in a git copy of it, against an OpenAI-compatible server on 127.0.0.1, in the order written."""

from __future__ import annotations

import glob
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import click
import pytest

from lvegit.cli import cli as lvegit_group
from lvegit.commands.catalog import COMMANDS

from builders import PROJECT_ROOT, GitRepo
from servers import Running

# Runs only inside GitHub Actions (an event file and a token); tests/github runs it end to end.
NEEDS_GITHUB = ("action",)
# Reaches the Hugging Face hub; tests/checkers/test_hub.py runs it against a loopback hub.
NEEDS_THE_HUB = "--download"


def readme_examples() -> list[str]:
    readme = (PROJECT_ROOT / "README.md").read_text()
    blocks = re.findall(r"```console\n(.*?)```", readme, re.DOTALL)
    return [
        line.removeprefix("$ ").split("  #")[0].strip()
        for block in blocks
        for line in block.splitlines()
        if line.startswith("$ lvegit ")
    ]


def help_examples() -> list[str]:
    examples = []
    context = click.Context(lvegit_group, info_name="lvegit")
    for name in ["", *COMMANDS]:
        command = lvegit_group.get_command(context, name) if name else lvegit_group
        assert command is not None
        text = command.help or ""
        assert "Examples:" in text, f"lvegit {name} --help has no examples"
        section = text.split("Examples:", 1)[1]
        examples += [line.strip() for line in section.splitlines() if line.strip().startswith("lvegit")]
    return examples


EXAMPLES = [
    e
    for e in readme_examples() + help_examples()
    if shlex.split(e)[1] not in NEEDS_GITHUB and NEEDS_THE_HUB not in shlex.split(e)
]


@pytest.fixture(scope="module")
def bundled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repository holding the bundled LVEs, with origin/main and a branch my-branch."""
    root = tmp_path_factory.mktemp("bundled") / "lves"
    git = GitRepo(root)
    shutil.copytree(PROJECT_ROOT / "repository", root / "repository")
    shutil.copy(PROJECT_ROOT / ".lverepo", root / ".lverepo")
    git.commit("the bundled LVEs")
    git.git("update-ref", "refs/remotes/origin/main", "HEAD")
    git.git("branch", "my-branch")
    return root


def test_examples_use_the_bundled_repository() -> None:
    """Paths in examples name LVEs that exist (those `lvegit new` creates aside)."""
    for example in EXAMPLES:
        words = shlex.split(example)
        if words[1] == "new":
            continue
        for word in words:
            if word.startswith("repository/"):
                assert (PROJECT_ROOT / word).exists(), f"{example}: {word} is not in the bundled repository"


@pytest.mark.parametrize("example", EXAMPLES)
def test_example_runs(example: str, bundled: Path, cli: Any, openai_server: Running) -> None:
    words = shlex.split(example)[1:]
    stdin = ""
    if words == ["new"]:  # as on a terminal: the questions answered
        words.append("--interactive")
        stdin = "examples/asked\nopenai/gpt-4o-mini\nLambdaChecker\n\n\n\n\n"
    args = [match for word in words for match in (sorted(glob.glob(word, root_dir=bundled)) or [word])]
    if args[:1] == ["new"] and "--interactive" not in args:
        name = args[1]  # each run starts from the same tree: a second run of an example is no error
        shutil.rmtree(bundled / "repository" / name, ignore_errors=True)
    result = cli(*args, cwd=bundled, stdin=stdin)
    assert result.code in (0, 1), f"{example}: exit {result.code}\n{result.err}"
    assert "unexpected error" not in result.err
