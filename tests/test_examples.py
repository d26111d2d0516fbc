"""Every `lvegit ...` example of the README, of the docs and of each command's --help runs on the bundled
repository: in a git copy of it, against an OpenAI-compatible server on 127.0.0.1, in the order written.
Where a console block shows an example's output, the output is compared (a line `...` stands for any lines),
on the bundled repository as committed."""

from __future__ import annotations

import glob
import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import click
import pytest

from lvegit.cli import cli as lvegit_group
from lvegit.commands.catalog import COMMANDS

from builders import PROJECT_ROOT, GitRepo
from servers import Running

# Runs only inside GitHub Actions (an event file and a token); tests/github runs it end to end. The
# disclosure commands need the repository's recipients and a disclosure identity, which the bundled
# repository does not publish; tests/commands/test_disclosure_command.py runs them on a repository of its own.
NEEDS_GITHUB = ("action",)
NEEDS_AN_IDENTITY = ("disclosure",)
# Reaches the Hugging Face hub; tests/checkers/test_hub.py runs it against a loopback hub.
NEEDS_THE_HUB = "--download"


DOCUMENTS = [PROJECT_ROOT / "README.md", *sorted((PROJECT_ROOT / "docs").glob("*.md"))]


def documented_examples() -> dict[str, list[str]]:
    """Each `$ lvegit ...` line of the console blocks, with the output lines shown after it (maybe none)."""
    examples: dict[str, list[str]] = {}
    for document in DOCUMENTS:
        for block in re.findall(r"```console\n(.*?)```", document.read_text(), re.DOTALL):
            output: list[str] | None = None
            for line in block.splitlines():
                if line.startswith("$ "):
                    output = None
                    if line.startswith("$ lvegit "):
                        output = examples.setdefault(line.removeprefix("$ ").split("  #")[0].strip(), [])
                elif output is not None:
                    output.append(line)
    return examples


def matches(expected: list[str], actual: list[str]) -> bool:
    """Whether `actual` is `expected` with each `...` line standing for any number of lines."""
    if not expected:
        return not actual
    if expected[0] == "...":
        return any(matches(expected[1:], actual[start:]) for start in range(len(actual) + 1))
    return bool(actual) and actual[0] == expected[0] and matches(expected[1:], actual[1:])


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


OUTPUTS = documented_examples()
EXAMPLES = [  # each once, where it first appears (the README, the docs, then --help)
    e
    for e in dict.fromkeys([*OUTPUTS, *help_examples()])
    if shlex.split(e)[1] not in NEEDS_GITHUB + NEEDS_AN_IDENTITY and NEEDS_THE_HUB not in shlex.split(e)
]


def test_matches_reads_ellipses_as_any_lines() -> None:
    assert matches(["a", "...", "d"], ["a", "b", "c", "d"]) and matches(["...", "d"], ["d"])
    assert not matches(["a", "...", "d"], ["a", "b"]) and not matches(["a"], ["a", "b"])


@pytest.fixture(scope="module")
def bundled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repository holding the bundled LVEs, with origin/main and a branch my-branch."""
    root = tmp_path_factory.mktemp("bundled") / "lves"
    git = GitRepo(root)
    shutil.copytree(PROJECT_ROOT / "repository", root / "repository")
    shutil.copytree(PROJECT_ROOT / "history", root / "history")
    shutil.copytree(PROJECT_ROOT / "examples" / "findings", root / "examples" / "findings")
    shutil.copy(PROJECT_ROOT / ".lverepo", root / ".lverepo")
    shutil.copy(PROJECT_ROOT / "lve-ids.json", root / "lve-ids.json")
    git.commit("the bundled LVEs and their run history")
    git.git("update-ref", "refs/remotes/origin/main", "HEAD")
    git.git("branch", "my-branch")
    return root


@pytest.fixture(scope="module")
def pristine(bundled: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clone of `bundled`, put back as committed before each example whose output is shown."""
    clone = tmp_path_factory.mktemp("pristine") / "lves"
    subprocess.run(["git", "clone", "-q", str(bundled), str(clone)], check=True)
    return clone


def test_examples_use_the_bundled_repository() -> None:
    """Paths in examples name LVEs that exist (those `lvegit new` creates aside)."""
    for example in EXAMPLES:
        words = shlex.split(example)
        if words[1] == "new":
            continue
        for word in words:
            if word.startswith("repository/"):
                assert (PROJECT_ROOT / word).exists(), f"{example}: {word} is not in the bundled repository"


def calculator(body: dict[str, Any]) -> str:
    """A model that multiplies (the bundled arithmetic LVEs ask it to) and otherwise repeats the prompt."""
    text = body["messages"][-1]["content"]
    product = re.search(r"(\d+) \* (\d+)", text)
    return str(int(product[1]) * int(product[2])) if product else text


@pytest.mark.parametrize("example", EXAMPLES)
def test_example_runs(example: str, bundled: Path, pristine: Path, cli: Any, openai_server: Running) -> None:
    openai_server.state.answer = calculator
    expected = OUTPUTS.get(example, [])
    words = shlex.split(example)[1:]
    # Shown with its output, or writing a new LVE: run on the repository as committed, unaltered (the bundled
    # LVEs are what a reader has; an example that fails beside them fails here).
    if expected or words[:1] == ["new"]:
        subprocess.run(["git", "checkout", "-q", "--", "."], cwd=pristine, check=True)
        subprocess.run(["git", "clean", "-fdq", "-e", ".lvegit-cache"], cwd=pristine, check=True)
        bundled = pristine
    stdin = ""
    if words == ["new"]:  # as on a terminal: the questions answered
        words.append("--interactive")
        stdin = "examples/asked\nopenai/gpt-4o-mini\nLambdaChecker\n\n\n\n\n\n"
    args = [match for word in words for match in (sorted(glob.glob(word, root_dir=bundled)) or [word])]
    result = cli(*args, cwd=bundled, stdin=stdin)
    assert result.code in (0, 1), f"{example}: exit {result.code}\n{result.err}"
    assert "unexpected error" not in result.err
    if expected:
        actual = (result.out + result.err).splitlines()
        assert matches(expected, actual), f"{example}: the documented output differs:\n" + "\n".join(actual)


def main_job_extras() -> list[str]:
    """The extras the README's main-job command installs (`python -m pip install ".[pii,data]" && ...`)."""
    [extras] = re.findall(
        r'python -m pip install "\.\[([a-z,]+)\]" && lvegit check --all', README.read_text()
    )
    return extras.split(",")


def import_names(extra: str) -> set[str]:
    """The top-level modules of an extra's packages, as installed here."""
    import importlib.metadata
    import tomllib

    project = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]
    wanted = {
        re.split(r"[<>=!\[ ;]", requirement)[0].lower().replace("_", "-")
        for requirement in project["optional-dependencies"][extra]
        if not requirement.startswith("lvegit")
    }
    owners = importlib.metadata.packages_distributions()
    return {
        name
        for name, distributions in owners.items()
        if any(d.lower().replace("_", "-") in wanted for d in distributions) and not name.startswith("_")
    }


README = PROJECT_ROOT / "README.md"
TOUR = [
    line.removeprefix("$ ").split("  #")[0].strip()
    for block in re.findall(r"## A tour\n.*?```console\n(.*?)```", README.read_text(), re.DOTALL)
    for line in block.splitlines()
    if line.startswith("$ lvegit ")
]


def test_the_main_job_command_is_the_same_in_the_readme_and_the_docs() -> None:
    getting_started = (PROJECT_ROOT / "docs/getting-started.md").read_text()
    assert (
        f'python -m pip install ".[{",".join(main_job_extras())}]" && lvegit check --all' in getting_started
    )


def test_the_tour_runs_with_only_what_the_readme_installs(pristine: Path, tmp_path: Path) -> None:
    """The README's tour, each command as its own process, on the bundled repository as committed, with
    every module of the extras the README's main-job command does not install made unimportable (a new
    user has only those): `lvegit status` once needed the data extra the README did not install."""
    import json
    import sys

    subprocess.run(["git", "checkout", "-q", "--", "."], cwd=pristine, check=True)
    subprocess.run(["git", "clean", "-fdq"], cwd=pristine, check=True)
    project = __import__("tomllib").loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]
    missing = set(project["optional-dependencies"]) - set(main_job_extras())
    installed = set().union(*(import_names(extra) for extra in main_job_extras()))
    blocked = sorted(set().union(*(import_names(extra) for extra in missing)) - installed - {"lvegit"})
    assert TOUR and "pyarrow" not in blocked and "duckdb" not in blocked
    program = (
        f"import sys\nfor name in {json.dumps(blocked)}:\n    sys.modules[name] = None\n"
        "from lvegit.cli import main\nmain()"
    )
    for example in TOUR:
        words = shlex.split(example)[1:]
        ran = subprocess.run(
            [sys.executable, "-c", program, *words], cwd=pristine, capture_output=True, text=True, timeout=300
        )
        assert ran.returncode == 0, f"{example}: exit {ran.returncode}\n{ran.stderr[-2000:]}"


WORKFLOW_FILES = sorted(
    [*PROJECT_ROOT.glob("examples/workflows/*.yml"), *PROJECT_ROOT.glob(".github/workflows/*.yml")]
)


@pytest.mark.parametrize("workflow", WORKFLOW_FILES, ids=[path.name for path in WORKFLOW_FILES])
def test_hash_files_hashes_files_the_job_writes_in_the_workspace(workflow: Path) -> None:
    """GitHub's hashFiles() takes patterns relative to GITHUB_WORKSPACE and hashes only files under it
    (docs.github.com, "Expressions: hashFiles"); the cache template once hashed a file under runner.temp,
    so its key never changed and models needed later never reached the cache. Each pattern here is a
    literal relative path that an earlier step of the same job writes, so the key follows what it caches."""
    import yaml

    jobs = yaml.safe_load(workflow.read_text())["jobs"]
    for name, job in jobs.items():
        earlier = ""
        for step in job.get("steps", []):
            text = json.dumps(step)
            for argument in re.findall(r"hashFiles\(([^)]*)\)", text):
                pattern = re.fullmatch(r"'([^'$/][^'$]*)'", argument)
                assert pattern, (
                    f"{workflow.name} {name}: hashFiles({argument}) is no path relative to the workspace"
                )
                assert "runner.temp" not in argument and ".." not in pattern[1], argument
                assert (
                    re.search(rf"> *{re.escape(pattern[1])}\b", earlier)
                    or (PROJECT_ROOT / pattern[1]).exists()
                ), f"{workflow.name} {name}: no earlier step writes {pattern[1]}"
            earlier += step.get("run", "") + "\n"
