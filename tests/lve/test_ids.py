"""Stable LVE ids: given after merge by `lvegit ids assign` (the id workflow), kept when an LVE moves,
retired and never reused when it goes, accepted wherever a path is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from builders import PROJECT_ROOT, GitRepo, RepoBuilder, instance, shipped_schema_accepts

ROWS = {"i.jsonl": [instance("3", True, a=1, b=2)]}


def registry(root: Path) -> dict[str, dict[str, str]]:
    return dict(json.loads((root / "lve-ids.json").read_text())["ids"])


def test_assign_gives_ids_in_path_order_and_keeps_them_across_moves_never_reusing_one(
    cli: Any, tmp_path: Path
) -> None:
    git = GitRepo(tmp_path / "lves")
    lves = RepoBuilder(git.root)
    lves.lve("cat/b", instances=ROWS)
    lves.lve("cat/a", instances=ROWS)
    first = cli("ids", "assign", "--today", "2026-11-26", cwd=git.root)
    assert first.code == 0, first.err
    assert registry(git.root) == {
        "LVE-2026-0001": {"path": "repository/cat/a/openai--gpt-4o-mini", "since": "2026-11-26"},
        "LVE-2026-0002": {"path": "repository/cat/b/openai--gpt-4o-mini", "since": "2026-11-26"},
    }
    git.commit("ids")
    git.git("mv", "repository/cat/a", "repository/cat/renamed")  # git's rename detection follows it
    git.git("rm", "-q", "-r", "repository/cat/b")
    git.commit("move a, remove b")
    moved = cli("ids", "assign", "--today", "2026-12-01", cwd=git.root)
    assert "LVE-2026-0001 moved: repository/cat/a/openai--gpt-4o-mini -> repository/cat/renamed" in moved.out
    assert "LVE-2026-0002 retired" in moved.out
    git.commit("ids again")
    lves.lve("cat/b", instances=ROWS)  # the same path again is a new LVE: a new id
    again = cli("ids", "assign", "--today", "2026-12-02", cwd=git.root)
    assert again.code == 0
    ids = registry(git.root)
    assert ids["LVE-2026-0001"]["path"] == "repository/cat/renamed/openai--gpt-4o-mini"
    assert ids["LVE-2026-0002"] == {
        "path": "repository/cat/b/openai--gpt-4o-mini",
        "since": "2026-11-26",
        "retired": "2026-12-01",
    }
    assert ids["LVE-2026-0003"]["path"] == "repository/cat/b/openai--gpt-4o-mini"
    # the registry, retired ids included, is the document `lvegit schema ids` prints (it had none)
    shipped_schema_accepts(json.loads((git.root / "lve-ids.json").read_text()), "ids")
    shipped_schema_accepts(json.loads((PROJECT_ROOT / "lve-ids.json").read_text()), "ids")
    nothing = cli("ids", "assign", "--today", "2026-12-02", cwd=git.root)
    assert "0 ids given, 0 LVEs moved, 0 retired" in nothing.out


def test_an_id_is_taken_wherever_a_path_is(cli: Any, tmp_path: Path) -> None:
    git = GitRepo(tmp_path / "lves")
    RepoBuilder(git.root).lve("cat/a", instances=ROWS)
    assert cli("ids", "assign", "--today", "2026-11-26", cwd=git.root).code == 0
    shown = cli("show", "LVE-2026-0001", cwd=git.root)
    assert shown.code == 0 and "  id: LVE-2026-0001" in shown.out
    assert cli("show", "LVE-2026-0001", "--format", "json", cwd=git.root).json()["id"] == "LVE-2026-0001"
    checked = cli("check", "LVE-2026-0001", "--format", "json", cwd=git.root).json()
    assert [lve["path"] for lve in checked["lves"]] == ["repository/cat/a/openai--gpt-4o-mini"]
    listed = cli("list", "--format", "json", cwd=git.root).json()
    assert [row["id"] for row in listed["lves"]] == ["LVE-2026-0001"]
    missing = cli("show", "LVE-2026-0009", cwd=git.root)
    assert missing.code == 2 and "LVE-2026-0009: no LVE has this id" in missing.err


@pytest.mark.parametrize(
    ("ids", "complaint"),
    [
        (
            {
                "LVE-2026-0001": {"path": "repository/x", "since": "d"},
                "LVE-2026-0002": {"path": "repository/x", "since": "d"},
            },
            "repository/x has two ids",
        ),
        (
            {"LVE-26-1": {"path": "repository/x", "since": "d"}},
            "'LVE-26-1' is not an id such as LVE-2026-0042",
        ),
        ({"LVE-2026-0001": {"path": 3, "since": "d"}}, "LVE-2026-0001: needs a path"),
    ],
)
def test_a_broken_registry_is_refused_by_name(
    repo: RepoBuilder, cli: Any, ids: dict[str, Any], complaint: str
) -> None:
    repo.lve("cat/a", instances=ROWS)
    (repo.root / "lve-ids.json").write_text(json.dumps({"schema": "lvegit-ids", "version": 1, "ids": ids}))
    result = cli("list", cwd=repo.root)
    assert result.code == 2 and f"lve-ids.json: {complaint}" in result.err


def test_two_merges_racing_for_the_next_id_get_different_ones(tmp_path: Path) -> None:
    """The id step of examples/workflows/lvegit-ids.yml, run as written by bash for two merges whose jobs
    both start before either pushes, against a bare repository standing in for GitHub: the second push is
    refused, its job gives the ids again on top of the first's, and every LVE ends with an id of its own."""
    import yaml

    workflow = yaml.safe_load((PROJECT_ROOT / "examples/workflows/lvegit-ids.yml").read_text())
    [step] = [
        s for s in workflow["jobs"]["ids"]["steps"] if s.get("name", "").startswith("Give the new LVEs")
    ]
    assert workflow["jobs"]["ids"]["permissions"] == {"contents": "write"}
    server = tmp_path / "server" / "org" / "lves.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(server)], check=True)
    work = GitRepo(tmp_path / "work")
    lves = RepoBuilder(work.root)
    lves.lve("cat/base", instances=ROWS)
    work.commit("base")
    work.git("remote", "add", "origin", str(server))
    work.git("push", "-q", "origin", "HEAD:main")
    merges = []
    for name in ("first", "second"):  # two pull requests merged one after the other
        lves.lve(f"cat/{name}", instances=ROWS)
        merges.append(work.commit(f"merge {name}"))
        work.git("push", "-q", "origin", "HEAD:main")
    jobs = []
    for number, merge in enumerate(merges):  # each job checks out its merge, before any job pushes
        job = tmp_path / f"job{number}"
        subprocess.run(["git", "clone", "-q", str(server), str(job)], check=True)
        subprocess.run(["git", "checkout", "-q", merge], cwd=job, check=True)
        jobs.append(job)
    environment = {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "GITHUB_TOKEN": "ghs_test",
        "BRANCH": "main",
        "GIT_CONFIG_COUNT": "0",
    }
    for job in reversed(jobs):  # the later merge's job pushes first: the earlier one's push is refused
        done = subprocess.run(
            ["bash", "-e", "-c", step["run"]],
            cwd=job,
            env=environment,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
    final = tmp_path / "final"
    subprocess.run(["git", "clone", "-q", str(server), str(final)], check=True)
    ids = registry(final)
    paths = [entry["path"] for entry in ids.values()]
    assert len(ids) == 3 and [lve_id.rsplit("-", 1)[1] for lve_id in sorted(ids)] == ["0001", "0002", "0003"]
    assert sorted(paths) == [f"repository/cat/{n}/openai--gpt-4o-mini" for n in ("base", "first", "second")]
    log = subprocess.run(["git", "log", "--format=%s"], cwd=final, capture_output=True, text=True, check=True)
    assert (
        sum(subject.startswith("LVE ids for") for subject in log.stdout.splitlines()) == 1
    )  # refused: no second


def test_assign_gives_no_id_to_a_draft_and_says_so_as_for_one_git_does_not_track(
    cli: Any, tmp_path: Path
) -> None:
    """After `lvegit new`, `ids assign` once numbered the placeholder draft without a word."""
    git = GitRepo(tmp_path / "lves")
    RepoBuilder(git.root).lve("cat/a", instances=ROWS)
    git.commit("a")
    assert cli("new", "cat/draft", "--model", "openai/gpt-4o", "--no-interactive", cwd=git.root).code == 0
    RepoBuilder(git.root).lve("cat/b", instances=ROWS)  # valid, not committed yet
    result = cli("ids", "assign", "--today", "2026-11-26", cwd=git.root)
    assert result.code == 0
    assert registry(git.root) == {
        "LVE-2026-0001": {"path": "repository/cat/a/openai--gpt-4o-mini", "since": "2026-11-26"},
        "LVE-2026-0002": {"path": "repository/cat/b/openai--gpt-4o-mini", "since": "2026-11-26"},
    }
    assert result.err.splitlines() == [
        "lvegit: LVE-2026-0002: git does not track repository/cat/b/openai--gpt-4o-mini yet: commit it with "
        "lve-ids.json",
        "lvegit: no id yet for repository/cat/draft/openai--gpt-4o: a draft, or it does not load (lvegit "
        "validate says why)",
    ]
