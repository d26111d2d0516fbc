from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from lvegit.base.errors import UsageError
from lvegit.disclosure.identity import load_identity, take_from_environment
from lvegit.disclosure.withheld import withhold
from lvegit.lve.repo import Repository

from builders import GitRepo, RepoBuilder, instance, recorded_calls, recording_git
from withholding import ABSTRACT, CANARY, CANARY_TEST, Keys, with_recipients


def test_the_identity_reaches_no_process_lvegit_starts(
    tmp_path: Path, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git runs for each withheld LVE (its history is asked) and custom checkers run in the sandbox while
    the key is in use: neither they nor lvegit's own environment, which they could read, hold it."""
    keys = Keys()
    git = GitRepo(tmp_path / "lves")
    lves = RepoBuilder(git.root)
    with_recipients(lves, keys.public(keys.maintainer))
    lve_dir = lves.lve(
        "privacy/leak", CANARY_TEST, instances={"i.jsonl": [instance(CANARY, False, a=1, b=2)]}
    )
    withhold(Repository(lves.root), lve_dir, ABSTRACT)
    git.commit("withheld")
    log = recording_git(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    secret = keys.secret(keys.maintainer)
    monkeypatch.setenv("LVEGIT_DISCLOSURE_IDENTITY", secret)
    result = cli("check", "--all", "--no-cache", "--repo", str(git.root))
    assert "privacy/leak/openai--gpt-4o-mini: ok; 1 reproduced" in result.out, result.out + result.err
    # What any process started from here would inherit (/proc's view of lvegit's environment is the one
    # it was started with: the variable taken out of os.environ is what counts).
    assert "LVEGIT_DISCLOSURE_IDENTITY" not in os.environ
    calls = recorded_calls(log)
    assert calls  # git was asked while the identity was held
    for call in calls:
        assert secret not in repr(call["env"]) and secret not in repr(call["parent_env"])


def test_an_identity_file_must_hold_one_key(tmp_path: Path) -> None:
    take_from_environment()  # none: the suite's environment has no LVEGIT_* variable
    (tmp_path / "key.txt").write_text("# nothing here\n")
    with pytest.raises(UsageError, match=r"--identity .*key\.txt: not one age identity"):
        load_identity(tmp_path / "key.txt")
    with pytest.raises(UsageError, match="needs a disclosure identity"):
        load_identity(None, required=True)
