"""validate and check on withheld LVEs without any key, and the Action on pull requests that add one."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from lvegit.disclosure.withheld import withhold
from lvegit.lve.repo import Repository

from builders import GitRepo, RepoBuilder, instance, pull_request_payload
from servers import GitHubServer
from withholding import ABSTRACT, CANARY, CANARY_TEST, Keys, with_recipients

pytest.importorskip("pyrage")


def _withheld(lves: RepoBuilder, keys: Keys, name: str = "privacy/leak") -> Path:
    with_recipients(lves, keys.public(keys.maintainer))
    lve_dir = lves.lve(name, CANARY_TEST, instances={"i.jsonl": [instance(CANARY, False, a=1, b=2)]})
    withhold(Repository(lves.root), lve_dir, ABSTRACT)
    return lve_dir


def test_check_validates_a_withheld_lve_and_skips_its_replay_saying_why(repo: RepoBuilder, cli: Any) -> None:
    _withheld(repo, Keys())
    repo.lve("cat/clear", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    result = cli("check", "--all", "--repo", str(repo.root))
    assert result.code == 0, result.out + result.err
    assert "privacy/leak/openai--gpt-4o-mini: ok; 1 skipped" in result.out
    assert "payload withheld until 2027-01-31" in result.out
    document = cli("check", "--all", "--format", "json", "--repo", str(repo.root))
    [entry] = [e for e in document.json()["lves"] if "leak" in e["path"]]
    assert entry["valid"] and entry["replay"]["skipped"] == 1
    assert CANARY not in result.out + result.err + document.out + document.err


def test_validate_names_the_clear_file_in_a_withheld_lve(repo: RepoBuilder, cli: Any) -> None:
    lve_dir = _withheld(repo, Keys())
    (lve_dir / "prompt.txt").write_text(CANARY)
    for command in ("validate", "check"):
        result = cli(command, str(lve_dir), "--repo", str(repo.root))
        assert result.code == 1
        assert "privacy/leak/openai--gpt-4o-mini/prompt.txt: a withheld LVE holds" in result.out
        assert CANARY not in result.out + result.err


def checked_pull_request(
    action: Any, github_server: GitHubServer, git: GitRepo, number: int, base: str, head: str
) -> tuple[Any, str]:
    """The Action's check of pull request `number` from `base` to `head`: its result and its comment."""
    github_server.pulls[number] = head
    result = action(
        "pull_request", pull_request_payload(number, base, head), git.root, comment="true", github_token="t"
    )
    return result, str(github_server.comments[number][0]["body"])


def test_a_pull_request_adding_a_withheld_lve_passes_without_any_key(
    tmp_path: Path, github_server: GitHubServer, action: Any
) -> None:
    git = GitRepo(tmp_path / "workspace")
    lves = RepoBuilder(git.root)
    lves.lve("cat/a", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    keys = Keys()
    with_recipients(lves, keys.public(keys.maintainer))
    base = git.commit("base")
    git.git("checkout", "-q", "-b", "pr")
    _withheld(lves, keys)
    head = git.commit("a withheld LVE")
    result, body = checked_pull_request(action, github_server, git, 7, base, head)
    assert result.code == 0, result.out + result.err
    assert "payload withheld until 2027" in body
    assert CANARY not in body + result.out + result.err
    assert CANARY not in "".join(
        p.read_text(errors="replace") for p in git.root.rglob("*.json") if p.is_file()
    )


def test_a_pull_request_withholding_a_published_lve_fails(
    tmp_path: Path, github_server: GitHubServer, action: Any
) -> None:
    git = GitRepo(tmp_path / "workspace")
    lves = RepoBuilder(git.root)
    keys = Keys()
    with_recipients(lves, keys.public(keys.maintainer))
    lve_dir = lves.lve("cat/theirs", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    base = git.commit("base")
    git.git("checkout", "-q", "-b", "pr")
    withhold(Repository(lves.root), lve_dir, ABSTRACT)
    head = git.commit("withheld theirs")
    result, body = checked_pull_request(action, github_server, git, 8, base, head)
    assert result.code == 1, result.out + result.err
    assert "a published LVE cannot be withheld" in body


def test_a_pull_request_adding_clear_payload_to_a_withheld_lve_fails(
    tmp_path: Path, github_server: GitHubServer, action: Any
) -> None:
    git = GitRepo(tmp_path / "workspace")
    lves = RepoBuilder(git.root)
    lve_dir = _withheld(lves, Keys())
    base = git.commit("base")
    git.git("checkout", "-q", "-b", "pr")
    (lve_dir / "instances").mkdir()
    (lve_dir / "instances" / "i.jsonl").write_text(json.dumps(instance("x", False, a=1, b=2)) + "\n")
    head = git.commit("clear instances")
    result, body = checked_pull_request(action, github_server, git, 9, base, head)
    assert result.code == 1, result.out + result.err
    assert "a withheld LVE holds" in body, body


def test_the_trusted_job_replays_a_withheld_lve_with_its_identity_and_shows_no_payload(
    repo: RepoBuilder, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys = Keys()
    _withheld(repo, keys)
    monkeypatch.setenv("LVEGIT_DISCLOSURE_IDENTITY", keys.secret(keys.maintainer))
    result = cli("check", "--all", "--no-cache", "--repo", str(repo.root))
    assert "LVEGIT_DISCLOSURE_IDENTITY" not in os.environ  # taken out before any process could inherit it
    assert result.code == 0, result.out + result.err
    assert "privacy/leak/openai--gpt-4o-mini: ok; 1 reproduced" in result.out
    assert CANARY not in result.out + result.err
    assert not list(Path(tempfile.gettempdir()).glob("lvegit-withheld-*"))  # the scratch is gone


def test_with_an_identity_a_failing_withheld_lve_says_where_but_not_what(repo: RepoBuilder, cli: Any) -> None:
    keys = Keys()
    with_recipients(repo, keys.public(keys.maintainer))
    broken = {**CANARY_TEST, "prompt": [{"role": "user", "content": f"{CANARY} {{missing}}"}]}
    lve_dir = repo.lve("privacy/broken", broken, instances={"i.jsonl": [instance(CANARY, True, a=1, b=2)]})
    withhold(Repository(repo.root), lve_dir, ABSTRACT)
    identity = repo.root.parent / "key.txt"
    identity.write_text(keys.secret(keys.maintainer) + "\n")
    for output in ("text", "json"):
        result = cli(
            "check", "--all", "--identity", str(identity), "--format", output, "--repo", str(repo.root)
        )
        assert result.code == 1
        assert "privacy/broken/openai--gpt-4o-mini/test.json" in result.out
        assert CANARY not in result.out + result.err


def test_a_payload_that_shadows_its_abstract_is_refused_naming_the_lve_and_file(
    repo: RepoBuilder, cli: Any
) -> None:
    from lvegit.disclosure.envelope import encrypt
    from lvegit.disclosure.payload import commitment, pack

    keys = Keys()
    lve_dir = _withheld(repo, keys)
    tar = pack({"test.json": b"{}", "withheld.json": b"{}"})
    (lve_dir / "payload.age").write_bytes(encrypt(tar, [keys.public(keys.maintainer)]))
    abstract = json.loads((lve_dir / "withheld.json").read_text())
    abstract["commitment"]["sha256"] = commitment(tar)
    (lve_dir / "withheld.json").write_text(json.dumps(abstract))
    identity = repo.root.parent / "key.txt"
    identity.write_text(keys.secret(keys.maintainer))
    result = cli("check", "--all", "--identity", str(identity), "--repo", str(repo.root))
    assert result.code == 1
    assert "privacy/leak/openai--gpt-4o-mini/payload.age" in result.out and "shadow" in result.out
    assert sorted(p.name for p in lve_dir.iterdir()) == ["payload.age", "withheld.json"]
