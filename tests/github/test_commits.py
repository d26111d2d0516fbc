from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from lvegit.base.errors import UsageError
from lvegit.git.changes import changed_lves
from lvegit.git.vcs import GitCheckout
from lvegit.github.commits import ensure_history
from lvegit.lve.repo import Repository

from builders import GitRepo, RepoBuilder, instance


def test_a_shallow_single_commit_checkout_gets_what_the_diff_needs(tmp_path: Path) -> None:
    origin = GitRepo(tmp_path / "origin")
    lves = RepoBuilder(origin.root)
    lves.lve("cat/a")
    lves.lve("cat/b")
    base = origin.commit("base")
    origin.git("checkout", "-q", "-b", "pr")
    lves.lve("cat/a", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    origin.commit("pr 1")
    lves.lve("cat/c")
    head = origin.commit("pr 2")
    origin.git("checkout", "-q", "main")
    checkout = tmp_path / "checkout"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", "--branch", "pr", f"file://{origin.root}", str(checkout)],
        check=True,
    )
    git_checkout = GitCheckout(checkout)
    assert not git_checkout.has_commit(base)
    steps = ensure_history(git_checkout, base, head)
    assert steps == [f"fetched {base[:12]}", "fetched the full history of the shallow clone"]
    changes = changed_lves(Repository(checkout.resolve()), base, head)
    assert changes.changed == ["repository/cat/a/openai--gpt-4o-mini", "repository/cat/c/openai--gpt-4o-mini"]
    assert ensure_history(git_checkout, base, head) == []  # nothing more to do


def test_a_commit_origin_does_not_have_is_a_clear_error(tmp_path: Path) -> None:
    origin = GitRepo(tmp_path / "origin")
    RepoBuilder(origin.root).lve("cat/a")
    origin.commit("base")
    checkout = tmp_path / "checkout"
    subprocess.run(["git", "clone", "-q", f"file://{origin.root}", str(checkout)], check=True)
    with pytest.raises(UsageError, match=r"^cannot fetch 0{40} from origin: fatal: .*not our ref 0{40}"):
        ensure_history(GitCheckout(checkout), "0" * 40)
