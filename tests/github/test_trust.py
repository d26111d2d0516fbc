from __future__ import annotations

import json
from pathlib import Path

import pytest

from lvegit.git.vcs import GitCheckout
from lvegit.github.trust import Trusted, for_pull_request
from lvegit.lve import ids
from lvegit.lve.routing_file import MAX_CONFIG_BYTES

from builders import GitRepo


def _pull_request(tmp_path: Path, registry: str) -> tuple[GitRepo, Trusted]:
    """A repository whose base commit holds `registry` and a routing file; its pull request changes an LVE's
    file, and the work tree changes both (uncommitted, as a hostile job could)."""
    git = GitRepo(tmp_path / "workspace")
    (git.root / ids.REGISTRY).write_text(registry)
    (git.root / "lvegit.toml").write_text('[models."openai/gpt-4o-mini"]\nbackend = "openai"\n')
    (git.root / "repository").mkdir()
    base = git.commit("base")
    (git.root / "repository" / "note.txt").write_text("changed\n")
    head = git.commit("pr")
    (git.root / ids.REGISTRY).write_text("{}")
    (git.root / "lvegit.toml").write_text("# the work tree's\n")
    checkout = GitCheckout(git.root)
    trusted = for_pull_request(
        checkout, git.root, base, base, head, git.root / "history", tmp_path / "scratch"
    )
    return git, trusted


def test_the_id_registry_is_read_at_the_base_commit_up_to_the_registrys_own_limit(tmp_path: Path) -> None:
    """lve-ids.json may be larger than a routing file may (a repository of 10,000s of LVEs): the check of
    a pull request reads the base commit's up to the registry's limit, as `lvegit ids` does."""
    entries = {
        f"LVE-2026-{number:05d}": {
            "path": f"repository/cat/lve{number}/openai--gpt-4o-mini",
            "since": "2026-11-26",
        }
        for number in range(1, 16_000)
    }
    text = json.dumps({"schema": "lvegit-ids", "version": 1, "ids": entries})
    assert len(text.encode()) > MAX_CONFIG_BYTES
    _git, trusted = _pull_request(tmp_path, text)
    assert trusted.id_registry() == text
    live = ids.parse(text).live()
    assert live["repository/cat/lve15999/openai--gpt-4o-mini"] == "LVE-2026-15999"


def test_the_routing_reader_reads_only_the_routing_files_at_the_base_commit(tmp_path: Path) -> None:
    registry = json.dumps({"schema": "lvegit-ids", "version": 1, "ids": {}})
    _git, trusted = _pull_request(tmp_path, registry)
    assert trusted.routing("lvegit.toml") == '[models."openai/gpt-4o-mini"]\nbackend = "openai"\n'
    assert trusted.routing("pyproject.toml") is None
    with pytest.raises(ValueError, match=r"lve-ids\.json is no routing file"):
        trusted.routing(ids.REGISTRY)
