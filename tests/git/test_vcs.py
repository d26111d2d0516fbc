"""git as lvegit runs it: in the repository, with an environment from the allow-list plus git's own
variables, no terminal, and nothing from outside read as an option."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from lvegit.base.errors import UsageError
from lvegit.git.vcs import GitCheckout, tracked
from lvegit.github.commits import ensure_history

from builders import SECRETS, GitRepo, RepoBuilder, instance, recorded_calls, recording_git


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """A clone of a repository with one LVE, whose root holds planted code."""
    origin = GitRepo(tmp_path / "origin")
    RepoBuilder(origin.root).lve("cat/a", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    origin.commit("base")
    checkout = tmp_path / "checkout"
    subprocess.run(["git", "clone", "-q", f"file://{origin.root}", str(checkout)], check=True)
    return checkout


@pytest.mark.parametrize("option", ["--upload-pack=touch {flag}", "--output={flag}", "-o{flag}"])
def test_a_revision_that_git_would_read_as_an_option_is_refused(
    clone: Path, tmp_path: Path, option: str
) -> None:
    flag = tmp_path / "ran"
    base = option.format(flag=flag)
    checkout = GitCheckout(clone)
    with pytest.raises(UsageError, match="is not a git revision"):
        ensure_history(checkout, base, "HEAD")
    for asking in (checkout.commit, checkout.has_commit, lambda ref: checkout.merge_base(ref, "HEAD")):
        with pytest.raises(UsageError, match=r"^'--?.*' is not a git revision \(a revision never starts"):
            asking(base)
    assert not flag.exists()


def test_the_changed_command_refuses_an_option_as_its_base(clone: Path, tmp_path: Path) -> None:
    flag = tmp_path / "ran"
    done = subprocess.run(
        ["lvegit", "changed", "--base", f"--upload-pack=touch {flag}", "--repo", str(clone)],
        capture_output=True,
        text=True,
        env=os.environ,
    )
    assert done.returncode == 2 and "is not a git revision" in done.stderr
    assert not flag.exists()


def test_git_runs_with_no_secret_and_no_prompt(
    clone: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = recording_git(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "core.abbrev")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "9")
    monkeypatch.setenv("HOME", str(tmp_path))
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    checkout = GitCheckout(clone)
    head = checkout.commit("HEAD")
    assert checkout.read_at(head, "repository/cat/a/openai--gpt-4o-mini/instances/i.jsonl")
    assert checkout.names_at(head, "repository/cat/a/openai--gpt-4o-mini") == ["test.json"]
    assert ensure_history(checkout, head) == []
    calls = recorded_calls(log)
    assert len(calls) >= 5
    for call in calls:
        assert not set(SECRETS) & set(call["env"])
        assert call["env"]["GIT_TERMINAL_PROMPT"] == "0"
        assert call["stdin"] == os.devnull or "--batch" in call["args"]  # cat-file reads its object names
        # git's own configuration passes: the job's pairs and HOME (its global config: safe.directory)
        assert call["env"]["GIT_CONFIG_VALUE_0"] == "9" and call["env"]["HOME"] == str(tmp_path)


def plant_bare_repository(folder: Path, ran: Path) -> None:
    """What git takes for a bare repository (HEAD, objects/, refs/, a config whose core.fsmonitor runs a
    command that leaves `ran`), as a pull request can commit it into its LVE folder."""
    for inside in ("objects/pack", "refs/heads"):
        (folder / inside).mkdir(parents=True)
        (folder / inside / ".keep").write_text("")
    (folder / "HEAD").write_text("ref: refs/heads/main\n")
    (folder / "config").write_text(
        f"[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = {folder}\n"
        f'\tfsmonitor = "touch {ran}; false"\n'
    )


def test_git_never_takes_a_committed_lookalike_of_a_bare_repository_for_the_repository(
    tmp_path: Path,
) -> None:
    repo = GitRepo(tmp_path / "repo")
    planted = repo.root / "repository" / "cat" / "hostile"
    planted.mkdir(parents=True)
    (planted / "notes.txt").write_text("x")
    ran = tmp_path / "fsmonitor-ran"
    plant_bare_repository(planted, ran)
    repo.commit("a pull request")
    tracked(planted / "notes.txt")  # git refuses the lookalike (safe.bareRepository=explicit): not tracked
    assert not ran.exists()


def test_a_committed_lookalike_of_a_bare_repository_runs_nothing(tmp_path: Path, cli: Any) -> None:
    """A pull request commits, in its LVE folder, what git would take for a bare repository (HEAD, objects/,
    refs/, a config whose core.fsmonitor runs a command) and a .lverepo: a maintainer who replays from
    inside that LVE must run neither that command nor any hook."""
    repo = GitRepo(tmp_path / "repo")
    lve_dir = RepoBuilder(repo.root).lve(
        "cat/hostile", instances={"i.jsonl": [instance("3", True, a=1, b=2)]}
    )
    planted = lve_dir.parent
    ran = tmp_path / "fsmonitor-ran"
    (planted / ".lverepo").write_text("https://example.invalid/evil\n")
    (planted / ".lvegit-cache").mkdir()
    (planted / ".lvegit-cache" / "x").write_text("")
    plant_bare_repository(planted, ran)
    repo.commit("a pull request")
    result = cli("replay", cwd=lve_dir)
    assert result.code == 0, result.err
    assert not ran.exists()
    assert "repository/cat/hostile" in result.out  # the repository is the outer one, not the planted folder
