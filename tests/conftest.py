from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lvegit.base.settings import RetryPolicy, Settings, configure
from lvegit.checkers.registry import CheckerFactory
from lvegit.checkers.sandbox import CheckerWorker, SandboxSettings
from lvegit.cli import main

from builders import RepoBuilder, github_environment
from servers import GitHubServer, OpenAIServer, Running, serve, serve_github


@pytest.fixture(scope="session")
def confined() -> bool:
    """Whether the sandbox holds on this machine (Linux with Landlock or namespaces, and libseccomp):
    elsewhere contributed code is refused (see docs/security.md)."""
    with tempfile.TemporaryDirectory() as empty:
        worker = CheckerWorker("probe", Path(empty), SandboxSettings(allow_unconfined=True))
        worker.close()
    return worker.confined


# The caller's variables that would change what lvegit does under test: its own settings, model keys and
# endpoints (a real key must never reach a test), GitHub's (CI sets GITHUB_ACTIONS), git's (a hook sets
# GIT_DIR), the hub's and transformers' (offline modes, endpoints), colour and terminal size. Tests that
# need one set it themselves.
CALLERS_PREFIXES = (
    "LVEGIT_", "OPENAI_", "AZURE_OPENAI_", "GITHUB_", "RUNNER_", "INPUT_", "HF_", "HUGGING_FACE_", "GIT_",
    "TRANSFORMERS_",
)  # fmt: skip
CALLERS_NAMES = (
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "COLUMNS",
    "LINES",
    "XDG_CACHE_HOME",
)
# Kept: a proxy and its certificates are how this machine reaches the package registries (the tests that
# install the bare wheel or build pre-commit's environment go there); the loopback servers bypass them.
LOOPBACK = "127.0.0.1,localhost,::1"
KEPT = ("LVEGIT_REFERENCE_DIR",)  # where the official schemas are: the tests' own input


@pytest.fixture(autouse=True, scope="session")
def test_environment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The environment the suite needs, whatever the caller's: without the caller's lvegit, model, GitHub
    and hub variables, the loopback servers past any proxy, with an empty hub cache of its own and the hub offline (tests download nothing; the
    loopback hub's tests switch it on), and a plain terminal type for the processes that get a terminal."""
    with pytest.MonkeyPatch.context() as patch:
        for name in list(os.environ):
            if (name.startswith(CALLERS_PREFIXES) or name in CALLERS_NAMES) and name not in KEPT:
                patch.delenv(name)
        for name in ("NO_PROXY", "no_proxy"):
            patch.setenv(name, ",".join(filter(None, [os.environ.get(name), LOOPBACK])))
        patch.setenv("HF_HOME", str(tmp_path_factory.mktemp("hf-home")))
        patch.setenv("HF_HUB_OFFLINE", "1")
        patch.setenv("TERM", "xterm-256color")
        yield


@pytest.fixture(autouse=True)
def default_settings() -> Iterator[None]:
    """Each test starts with the settings a fresh process has: a command run in-process sets them (from
    its environment) for the rest of the process."""
    configure(Settings())
    yield
    configure(Settings())


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A disk of 8 MiB and 2,048 files of its own (a tmpfs; root only), as a runner's disk that a checker filled."""
    if os.geteuid() != 0:
        pytest.skip("mounting a disk of its own takes root")
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m,nr_inodes=2k", "tmpfs", str(disk)], check=True)
    try:
        yield disk
    finally:
        subprocess.run(["umount", "--lazy", str(disk)], check=True)


@pytest.fixture
def repo(tmp_path: Path) -> RepoBuilder:
    return RepoBuilder(tmp_path / "lves")


@dataclass
class CliResult:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


@pytest.fixture
def retry_waits() -> list[float]:
    """The seconds each retry of a model or GitHub request waited in `cli` runs (recorded, not slept)."""
    return []


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, retry_waits: list[float]):
    """Run `lvegit ARGS` in-process through the real entry point (error handler and exit codes included),
    with a retry policy that records its waits instead of sleeping them."""

    settings = Settings(retry=RetryPolicy(sleep=retry_waits.append))

    def run(*args: str, cwd: Path | None = None, stdin: str = "") -> CliResult:
        if cwd is not None:
            monkeypatch.chdir(cwd)
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        capsys.readouterr()
        with pytest.raises(SystemExit) as exit_info:
            main(list(args), settings)
        captured = capsys.readouterr()
        return CliResult(int(exit_info.value.code or 0), captured.out, captured.err)

    return run


@pytest.fixture
def action(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, cli: Any):
    """Run `lvegit action` with GitHub's environment for an event payload and inputs."""

    def run(event: str, payload: dict[str, Any], workspace: Path, **inputs: str) -> Any:
        for name, value in github_environment(event, payload, workspace, tmp_path).items():
            monkeypatch.setenv(name, value)
        for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AZURE_OPENAI_ENDPOINT", "GITHUB_TOKEN"):
            if name not in inputs.get("keep_env", ""):
                monkeypatch.delenv(name, raising=False)
        for name in [n for n in os.environ if n.startswith("INPUT_")]:  # each run gets only its own inputs
            monkeypatch.delenv(name)
        for name, value in inputs.items():
            if name != "keep_env":
                monkeypatch.setenv(f"INPUT_{name.upper().replace('_', '-')}", value)
        return cli("action", cwd=workspace)

    return run


@pytest.fixture
def openai_server(monkeypatch: pytest.MonkeyPatch):
    """An OpenAI-compatible server on 127.0.0.1; OPENAI_BASE_URL and OPENAI_API_KEY point lvegit at it."""
    state = OpenAIServer()
    for running in serve(state):
        monkeypatch.setenv("OPENAI_BASE_URL", running.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback-test-key")
        for name in ("AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_KEY"):
            monkeypatch.delenv(name, raising=False)
        yield running


@pytest.fixture
def github_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[GitHubServer]:
    """GitHub's REST API on 127.0.0.1; GITHUB_API_URL points lvegit at it."""
    state = GitHubServer()
    for base in serve_github(state):
        monkeypatch.setenv("GITHUB_API_URL", base)
        yield state


def adder(body: dict[str, Any]) -> str:
    """Answers 'Compute A + B.' (the builders' default prompt) correctly, except for 99 + 1."""
    text = body["messages"][-1]["content"]
    a, b = (int(x) for x in text.removeprefix("Compute ").removesuffix(".").split(" + "))
    return "101" if (a, b) == (99, 1) else str(a + b)


@pytest.fixture
def adding(openai_server: Running) -> Running:
    """The OpenAI-compatible server, answering the builders' arithmetic prompts."""
    openai_server.state.answer = adder
    return openai_server


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The checkers replay builds, by LVE."""
    built: list[str] = []
    original = CheckerFactory._build

    def counting(self: CheckerFactory, args: dict[str, Any]) -> Any:
        built.append(self.lve.rel)
        return original(self, args)

    monkeypatch.setattr(CheckerFactory, "_build", counting)
    return built
