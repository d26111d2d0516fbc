"""`lvegit action` end to end: a real git repository with a base and a pull request head, GitHub's event
payloads, and a GitHub REST server on 127.0.0.1 that records what the action does."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from lvegit import __version__
from lvegit.base.escape import markdown
from lvegit.base.records import schema_file
from lvegit.base.settings import current
from lvegit.github import results
from lvegit.github.render import COMMENT_LIMIT, MARKER
from lvegit.judge.results import CLAIMED
from lvegit.lve import spec

from builders import (
    JUDGE_RUBRIC,
    JUDGED_TEST,
    PROJECT_ROOT,
    GitRepo,
    RepoBuilder,
    github_environment,
    history_run,
    instance,
    pull_request_payload,
)
from servers import GitHubServer, OpenAIServer, Running, model_and_judge, serve


@pytest.fixture
def pull(tmp_path: Path) -> tuple[GitRepo, str, str]:
    """A repository whose branch `pr` changes LVE a (a new instance that does not reproduce) and adds c."""
    git = GitRepo(tmp_path / "workspace")
    lves = RepoBuilder(git.root)
    lves.lve("cat/a", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    lves.lve("cat/b", instances={"i.jsonl": [instance("5", True, a=2, b=3)]})
    base = git.commit("base")
    git.git("checkout", "-q", "-b", "pr")
    lves.lve("cat/a", instances={"i.jsonl": [instance("3", True, a=1, b=2), instance("5", True, a=1, b=3)]})
    lves.lve("cat/c", instances={"i.jsonl": [instance("7", True, a=3, b=4)]})
    head = git.commit("pr")
    return git, base, head


def workflow_run_payload(
    head: str, number: int | None, path: str = ".github/workflows/lvegit-check.yml"
) -> dict[str, Any]:
    return {
        "action": "completed",
        "workflow_run": {
            "id": 4242,
            "name": "LVE check",
            "path": path,
            "event": "pull_request",
            "head_sha": head,
            "conclusion": "failure",
            "head_repository": {"full_name": "contributor/lves"},
            "head_branch": "pr",
            # GitHub leaves this empty for pull requests from forks.
            "pull_requests": [] if number is None else [{"number": number, "head": {"sha": head}}],
        },
        "repository": {"full_name": "org/lves"},
    }


GIT_STATUS = {"A": "added", "D": "removed", "M": "modified", "R": "renamed", "T": "changed", "C": "copied"}


def github_pull(server: GitHubServer, number: int, git: GitRepo, base: str, head: str) -> None:
    """What GitHub says of pull request `number` from `base` to `head` in `git`: its head and base, its
    files (as the pull request's files list gives them), the head's tree and the base's ancestors."""
    files = []
    for entry in git.git(
        "-c", "core.quotePath=false", "diff", "--name-status", "-M", f"{base}...{head}"
    ).splitlines():
        status, *paths = entry.split("\t")
        kind = GIT_STATUS[status[0]]
        files.append(
            {"filename": paths[-1], "status": kind, "previous_filename": paths[0] if len(paths) > 1 else None}
        )
    server.pulls[number], server.bases[number], server.files[number] = head, base, files
    server.trees[head] = git.git(
        "-c", "core.quotePath=false", "ls-tree", "-r", "--name-only", head
    ).splitlines()
    for commit in (base, head):
        server.ancestors[commit] = set(git.git("rev-list", commit).split())
        for entry in git.git("-c", "core.quotePath=false", "ls-tree", "-r", commit).splitlines():
            description, path = entry.split("\t", 1)
            server.blobs[(commit, path)] = description.split()[2]


def outputs(tmp_path: Path) -> dict[str, str]:
    text = (tmp_path / "output.txt").read_text()
    return {m[0]: m[2] for m in re.findall(r"^(\S+)<<(\S+)\n(.*?)\n\2$", text, re.MULTILINE | re.DOTALL)}


def test_check_and_comment_create_then_update_one_comment(
    pull: tuple[GitRepo, str, str], github_server: GitHubServer, action: Any, tmp_path: Path
) -> None:
    git, base, head = pull
    github_server.pulls[7] = head
    github_server.comment(7, "Nice LVE!", login="maintainer", kind="User")
    github_server.comment(7, MARKER + " copied by a human", login="contributor", kind="User")
    result = action(
        "pull_request", pull_request_payload(7, base, head), git.root, comment="true", github_token="ghs_test"
    )
    assert result.code == 1  # a recorded verdict does not reproduce
    assert "created comment" in result.out
    [ours] = [c for c in github_server.comments[7] if c["user"]["type"] == "Bot"]
    body = ours["body"]
    assert body.startswith(MARKER + "\n## ❌ lvegit: 1 recorded verdict that no longer reproduces")
    assert "[repository/cat/a/openai\\-\\-gpt\\-4o\\-mini](https://github.example/org/lves/blob/" in body
    assert "repository/cat/b" not in body  # not changed by the pull request
    assert "| ✅ valid | ❌ 1 reproduced, 1 mismatch | — | 0 |" in body
    assert "#### ❌ repository/cat/a/openai\\-\\-gpt\\-4o\\-mini\n\n- replay mismatch: " in body  # why, first
    assert "\n\nInstances: 1 instance added." in body
    data = json.loads((git.root / "lvegit-results/results.json").read_text())
    assert [lve["path"] for lve in data["lves"]] == [
        "repository/cat/a/openai--gpt-4o-mini",
        "repository/cat/c/openai--gpt-4o-mini",
    ]
    assert (data["head_sha"], data["base_sha"], data["pull_request"]) == (head, base, 7)
    assert data["live"] == {"enabled": False, "reason": data["live"]["reason"]}
    assert data["live"]["reason"].startswith("no model available here")
    summary = (tmp_path / "summary.md").read_text()
    assert "## ❌ lvegit" in summary and MARKER not in summary
    out = outputs(tmp_path)
    assert out["mismatch"] == "1" and out["passed"] == "false" and out["invalid"] == "0"
    assert out["results-file"].endswith("lvegit-results/results.json")
    assert (
        "::error file=repository/cat/a/openai--gpt-4o-mini/instances/i.jsonl,line=2,title=lvegit::replay mismatch"
        in result.out
    )

    # The contributor fixes the instance: the same comment is edited in place.
    (git.root / "repository/cat/a/openai--gpt-4o-mini/instances/i.jsonl").write_text(
        json.dumps(instance("3", True, a=1, b=2)) + "\n" + json.dumps(instance("5", False, a=1, b=3)) + "\n"
    )
    head2 = git.commit("fix")
    github_server.pulls[7] = head2
    again = action(
        "pull_request",
        pull_request_payload(7, base, head2),
        git.root,
        comment="true",
        github_token="ghs_test",
        results_dir="second",
    )
    assert again.code == 0 and "updated comment" in again.out
    bots = [c for c in github_server.comments[7] if c["user"]["type"] == "Bot"]
    assert len(bots) == 1 and bots[0]["id"] == ours["id"]
    assert bots[0]["body"].startswith(MARKER + "\n## ✅ lvegit: all checks passed")
    methods = [method for method, _ in github_server.requests]
    assert methods.count("POST") == 1 and methods.count("PATCH") == 1


def test_the_image_entrypoint_runs_the_action(pull: tuple[GitRepo, str, str], tmp_path: Path) -> None:
    """The Dockerfile's ENTRYPOINT, run as a process the way GitHub runs the container: the event and the
    inputs in the environment only (no token, no API key), the workspace as working directory."""
    [entrypoint] = re.findall(
        r"^ENTRYPOINT (\[.*\])$", (PROJECT_ROOT / "Dockerfile").read_text(), re.MULTILINE
    )
    program, *arguments = json.loads(entrypoint)
    git, base, head = pull
    environment = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "PYTHONDONTWRITEBYTECODE": "1",
        "INPUT_LIVE": "false",
        **github_environment("pull_request", pull_request_payload(5, base, head), git.root, tmp_path),
    }
    command = [str(Path(sys.executable).parent / program), *arguments]  # the installed console script
    ran = subprocess.run(command, cwd=git.root, env=environment, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 1, ran.stderr  # cat/a's new instance does not reproduce
    document = results.load(git.root / "lvegit-results/results.json")
    assert [lve.path for lve in document.lves] == [
        "repository/cat/a/openai--gpt-4o-mini",
        "repository/cat/c/openai--gpt-4o-mini",
    ]
    assert (document.head_sha, document.pull_request, document.totals.mismatch) == (head, 5, 1)
    assert document.live.reason == "disabled by the live input"
    assert "## ❌ lvegit" in (tmp_path / "summary.md").read_text()
    assert outputs(tmp_path)["passed"] == "false"
    assert "::error file=repository/cat/a/openai--gpt-4o-mini/instances/i.jsonl,line=2" in ran.stdout


def test_a_workspace_owned_by_another_user_is_read_with_the_jobs_own_git_configuration(
    pull: tuple[GitRepo, str, str], tmp_path: Path
) -> None:
    """As GitHub runs the container: the checkout belongs to another uid, and the job passes git some
    configuration of its own (GIT_CONFIG_COUNT=1, a url.*.insteadOf): lvegit's safe.directory entry comes
    after it, not in its place, so git reads the workspace."""
    if os.geteuid() != 0:
        pytest.skip("changing the workspace's owner needs root")
    git, base, head = pull
    subprocess.run(["chown", "-R", "12345:12345", str(git.root)], check=True)
    environment = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "INPUT_LIVE": "false",
        **github_environment("pull_request", pull_request_payload(5, base, head), git.root, tmp_path),
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "url.https://mirror.example.invalid/.insteadOf",
        "GIT_CONFIG_VALUE_0": "https://example.invalid/",
    }
    command = [sys.executable, "-m", "lvegit", "action"]
    ran = subprocess.run(command, cwd=git.root, env=environment, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 1, ran.stderr  # judged: cat/a's new instance does not reproduce
    assert "dubious ownership" not in ran.stderr
    assert results.load(git.root / "lvegit-results/results.json").totals.mismatch == 1
    owned_by_root = [str(p) for p in git.root.rglob("*") if p.lstat().st_uid == 0]
    assert owned_by_root == []  # what lvegit created (the results folder) is the workspace owner's


def test_existing_comment_is_found_across_pages(
    pull: tuple[GitRepo, str, str], github_server: GitHubServer, action: Any
) -> None:
    git, base, head = pull
    github_server.pulls[3] = head
    for index in range(230):
        github_server.comment(3, f"chatter {index}", login="someone", kind="User")
    previous = github_server.comment(3, MARKER + "\nold verdict")
    action("pull_request", pull_request_payload(3, base, head), git.root, comment="true", github_token="t")
    assert previous["body"].startswith(MARKER + "\n## ❌")
    assert len(github_server.comments[3]) == 231
    pages = [path for method, path in github_server.requests if method == "GET" and "/comments" in path]
    assert len(pages) == 3


def test_fork_pull_request_two_stage_flow(
    pull: tuple[GitRepo, str, str], github_server: GitHubServer, action: Any, tmp_path: Path
) -> None:
    git, base, head = pull
    github_pull(github_server, 9, git, base, head)
    # Stage 1: pull_request from a fork, read-only, no token, no comment.
    check = action("pull_request", pull_request_payload(9, base, head, fork=True), git.root)
    assert check.code == 1 and github_server.requests == []
    artifact = tmp_path / "artifact"
    (git.root / "lvegit-results").rename(artifact)
    # Stage 2: workflow_run, trusted, no checkout of the PR's code: only the results file.
    trusted = tmp_path / "trusted"
    trusted.mkdir()
    result = action(
        "workflow_run",
        workflow_run_payload(head, None),
        trusted,
        mode="comment",
        results_dir=str(artifact),
        github_token="ghs_write",
    )
    assert result.code == 0, result.err
    [comment] = github_server.comments[9]
    assert comment["body"].startswith(MARKER + "\n## ❌ lvegit: 1 recorded verdict that no longer reproduces")
    # A results file for an older head is not posted.
    github_server.pulls[9] = "f" * 40
    stale = action(
        "workflow_run",
        workflow_run_payload(head, 9),
        trusted,
        mode="comment",
        results_dir=str(artifact),
        github_token="ghs_write",
    )
    assert stale.code == 0 and "not commenting" in stale.out
    assert len([m for m, _ in github_server.requests if m in ("POST", "PATCH")]) == 1


@pytest.mark.parametrize("forged", ["another schema", "nested past the parser's depth", "not UTF-8"])
def test_comment_mode_treats_the_results_file_as_hostile(
    github_server: GitHubServer, action: Any, tmp_path: Path, forged: str
) -> None:
    """A results file that is not one is a usage error naming it (exit 2, nothing posted), also where it
    nests deeper than Python's parser goes (a RecursionError was lvegit's own bug, exit 3)."""
    github_server.pulls[4] = "a" * 40
    artifact = tmp_path / "artifact"
    artifact.mkdir()
    texts = {
        "another schema": json.dumps({"schema": "lvegit-results", "version": 1, "lves": "<script>"}).encode(),
        "nested past the parser's depth": b"[" * 100_000,
        "not UTF-8": b'{"schema": "\xff"}',
    }
    (artifact / "results.json").write_bytes(texts[forged])
    result = action(
        "workflow_run",
        workflow_run_payload("a" * 40, 4),
        tmp_path,
        mode="comment",
        results_dir=str(artifact),
        github_token="t",
    )
    assert result.code == 2 and "results file" in result.err, result.err
    assert github_server.requests == []


def two_stages(
    action: Any, github_server: GitHubServer, git: GitRepo, base: str, head: str, tmp_path: Path, **run: Any
) -> tuple[Path, Callable[[], str]]:
    """A fork's pull request from `base` to `head`: its check (stage 1), whose results artifact it returns,
    and the comment stage (stage 2) on a workflow_run event whose `run` fields replace the check
    workflow's: a function that runs it and gives the comment's body (shas shortened to HEAD and BASE)."""
    github_pull(github_server, 9, git, base, head)
    action("pull_request", pull_request_payload(9, base, head, fork=True), git.root)
    artifact = tmp_path / "artifact"
    (git.root / "lvegit-results").rename(artifact)

    def comment() -> str:
        payload = workflow_run_payload(head, None)
        payload["workflow_run"].update(run)
        trusted = tmp_path / "trusted"
        trusted.mkdir(exist_ok=True)
        result = action(
            "workflow_run",
            payload,
            trusted,
            mode="comment",
            results_dir=str(artifact),
            github_token="ghs_write",
        )
        assert result.code == 0, result.err
        [body] = [c["body"] for c in github_server.comments[9]]
        return str(body).replace(head[:12], "HEAD").replace(base[:12], "BASE")

    return artifact, comment


def forge_all_passed(artifact: Path, **fields: Any) -> None:
    """Rewrite the results artifact as a pull request's own workflow could: every verdict reproduced,
    nothing failed; `fields` replace the document's."""
    path = artifact / "results.json"
    data = json.loads(path.read_text())
    for lve in data["lves"]:
        lve["replay"]["reproduced"] += lve["replay"]["mismatch"]
        lve["replay"]["mismatch"] = 0
        for item in lve["replayed"]:
            item.update(status="reproduced", replayed=item["recorded"], reason=None)
    data["totals"]["mismatch"] = 0
    data.update(failures=[], passed=True, **fields)
    path.write_text(json.dumps(data))
    results.load(path)  # still a valid results file


def test_an_honest_run_of_the_check_workflow_gets_a_verified_comment(
    pull: tuple[GitRepo, str, str], github_server: GitHubServer, action: Any, tmp_path: Path
) -> None:
    """The base branch's check workflow, a pull request that changes LVEs only, results of its head: the
    comment stage vouches for them, and a passing check is green."""
    git, base, _head = pull
    (git.root / "repository/cat/a/openai--gpt-4o-mini/instances/i.jsonl").write_text(
        json.dumps(instance("3", True, a=1, b=2)) + "\n" + json.dumps(instance("5", False, a=1, b=3)) + "\n"
    )
    head = git.commit("fix")
    _artifact, comment = two_stages(action, github_server, git, base, head, tmp_path)
    body = comment()
    assert body.startswith(MARKER + "\n## ✅ lvegit: all checks passed\n")
    assert "not verified" not in body


# Each way a pull request's own run can write the results the comment stage reads, and what it says.
FORGERIES = {
    "its own check workflow": (
        {".github/workflows/lvegit-check.yml": "name: LVE check\n"},
        {},
        {},
        "this pull request changes what its check runs on (.github/workflows/lvegit-check.yml)",
    ),
    "another workflow of the same name": (
        {".github/workflows/evil.yml": "name: LVE check\n"},
        {"path": ".github/workflows/evil.yml"},
        {},
        "they were uploaded by a run of .github/workflows/evil.yml, not of the check workflow",
    ),
    "a local action": (
        {"tools/setup/action.yml": "runs: {}\n"},
        {},
        {},
        "changes what its check runs on (tools/setup/action.yml)",
    ),
    "the routing file": (
        {"lvegit.toml": "[models]\n"},
        {},
        {},
        "changes what its check runs on (lvegit.toml)",
    ),
    "another head": (
        {},
        {},
        {"head_sha": "f" * 40},
        "they are for the commit ffffffffffff, not the pull request's head HEAD",
    ),
    "a base of its choosing": (
        {},
        {},
        {"base_sha": "e" * 40},
        "they compare with eeeeeeeeeeee, which is not on the pull request's base branch",
    ),
    "a run of another event": (
        {},
        {"event": "push"},
        {},
        "the run that uploaded them was triggered by push, not pull_request",
    ),
}


@pytest.mark.parametrize("forgery", FORGERIES)
def test_a_forged_results_artifact_is_relayed_as_unverified(
    pull: tuple[GitRepo, str, str], github_server: GitHubServer, action: Any, tmp_path: Path, forgery: str
) -> None:
    """A pull request whose real check has a mismatch uploads "all checks passed" from a run lvegit cannot
    vouch for: the comment's first line says the verdicts are the pull request's own run's and unverified,
    nothing in it is green, and it says why."""
    git, base, _head = pull
    files, run, fields, why = FORGERIES[forgery]
    for name, text in files.items():
        (git.root / name).parent.mkdir(parents=True, exist_ok=True)
        (git.root / name).write_text(text)
    head = git.commit("forgery")
    artifact, comment = two_stages(action, github_server, git, base, head, tmp_path, **run)
    forge_all_passed(artifact, **fields)
    body = comment()
    first = body.split("\n")[1]
    assert first.startswith("## ⚠️ lvegit: not verified: these verdicts come from the pull request's own run")
    assert "all checks passed" not in body and "✅ lvegit" not in body
    assert why in body.replace("\\", "")
    assert "What that run reports, unverified: no failures." in body


@pytest.mark.parametrize("its_workflow", ["the default branch's", "another"])
def test_a_pull_request_into_another_branch_is_verified_only_where_it_runs_the_same_check_workflow(
    pull: tuple[GitRepo, str, str],
    github_server: GitHubServer,
    action: Any,
    tmp_path: Path,
    its_workflow: str,
) -> None:
    """A pull request into another branch (`legacy`) runs that branch's check workflow, at the same path,
    and the comment stage (a workflow_run workflow, from the default branch) knew only the path: an old
    or weaker workflow there was vouched for. The comment is verified only where the base branch's check
    workflow is the default branch's file."""
    git, base, _head = pull
    git.git("checkout", "-q", base)
    workflow = git.root / ".github/workflows/lvegit-check.yml"
    workflow.parent.mkdir(parents=True)
    workflow.write_text("name: LVE check\n")
    main = git.commit("the check workflow")
    if its_workflow == "another":
        workflow.write_text("name: LVE check\n# an old one, which uploads any lvegit-results/\n")
    legacy = git.commit("legacy")
    (git.root / "repository/cat/a/openai--gpt-4o-mini/instances/i.jsonl").write_text(
        json.dumps(instance("3", True, a=1, b=2)) + "\n" + json.dumps(instance("5", False, a=1, b=3)) + "\n"
    )
    head = git.commit("into legacy")
    github_server.base_refs[9] = "legacy"
    github_server.blobs[("main", ".github/workflows/lvegit-check.yml")] = git.git(
        "rev-parse", f"{main}:{workflow.relative_to(git.root)}"
    )
    _artifact, comment = two_stages(action, github_server, git, legacy, head, tmp_path)
    body = comment()
    if its_workflow == "another":
        assert body.split("\n")[1].startswith("## ⚠️ lvegit: not verified")
        assert (
            "this pull request is into legacy, whose check workflow (.github/workflows/lvegit-check.yml) "
            "is not the default branch's (main)"
        ) in body.replace("\\", "")
    else:
        assert body.startswith(MARKER + "\n## ✅ lvegit: all checks passed\n")


@pytest.mark.parametrize("other", ["into another branch", "from another branch", "named by GitHub too"])
def test_a_run_is_bound_to_the_pull_request_its_results_name(
    pull: tuple[GitRepo, str, str], github_server: GitHubServer, action: Any, tmp_path: Path, other: str
) -> None:
    """GitHub names no pull request in a fork's workflow_run, so the number is the results file's: a fork
    with a second pull request from the same branch into another branch (whose check workflow may upload
    anything) could name the first in its artifact, and a run of another branch could name any pull
    request at the same head. A branch of the repository's own has both pull requests in the event, the
    first of them taken. Each is a doubt, naming the other pull request or the branch."""
    git, base, head = pull
    named = [{"number": 9, "head": {"sha": head}}, {"number": 10, "head": {"sha": head}}]
    run = {"pull_requests": named} if other == "named by GitHub too" else {}
    artifact, comment = two_stages(action, github_server, git, base, head, tmp_path, **run)
    forge_all_passed(artifact)
    if other != "from another branch":
        github_server.pulls[10], github_server.base_refs[10] = head, "v1"
        why = "the run may be of another pull request from its branch: #10 (into v1)"
    else:
        github_server.labels[9] = "someone:else"
        why = "the run was for the branch contributor:pr, which #9 is not from"
    body = comment()
    assert body.split("\n")[1].startswith("## ⚠️ lvegit: not verified")
    assert why in body.replace("\\", "")


@pytest.mark.parametrize("field", ["head_sha", "base_sha", "id"])
def test_a_forged_artifact_cannot_write_markup_through_a_field_the_comment_showed_raw(
    pull: tuple[GitRepo, str, str], github_server: GitHubServer, action: Any, tmp_path: Path, field: str
) -> None:
    """The comment showed the results' head and base (their first 12 characters) and each LVE's id in a
    code span, unescaped: a forged artifact closed the span and wrote a mention or HTML into the bot's
    comment (with a forged id alone, a verified one). Each is inline code only where it is one word."""
    git, base, head = pull
    artifact, comment = two_stages(action, github_server, git, base, head, tmp_path)
    data = json.loads((artifact / "results.json").read_text())
    hostile = "`@org/a <b>|`"
    if field == "id":
        data["lves"][0]["id"] = hostile
    else:
        data[field] = hostile
    (artifact / "results.json").write_text(json.dumps(data))
    body = comment()
    assert "@org" not in body and "<b>" not in body and "|`" not in body
    assert markdown(hostile if field == "id" else hostile[:12]) in body  # shown as its characters


@pytest.mark.parametrize("action_file", ["action.yml", "Action.YAML"])
def test_a_pull_request_changing_a_local_actions_script_is_unverified(
    pull: tuple[GitRepo, str, str], github_server: GitHubServer, action: Any, tmp_path: Path, action_file: str
) -> None:
    """A local action (`uses: ./tools/setup`) runs the files of its folder, not only its action.yml: a
    pull request that edits its script alone runs code of its own in the check. Its name is matched
    whatever its case (a macOS or Windows runner finds `Action.YAML` as `action.yaml`)."""
    git, base, _head = pull
    git.git("checkout", "-q", base)
    setup = git.root / "tools/setup"
    setup.mkdir(parents=True)
    (setup / action_file).write_text("runs: {using: composite, steps: [{run: ./run.sh, shell: bash}]}\n")
    (setup / "run.sh").write_text("echo setting up\n")
    base = git.commit("a local action")
    (setup / "run.sh").write_text("echo forged > lvegit-results/results.json\n")
    (git.root / "repository/cat/a/openai--gpt-4o-mini/instances/i.jsonl").write_text(
        json.dumps(instance("3", True, a=1, b=2)) + "\n" + json.dumps(instance("5", True, a=1, b=3)) + "\n"
    )
    head = git.commit("its script")
    artifact, comment = two_stages(action, github_server, git, base, head, tmp_path)
    forge_all_passed(artifact)
    body = comment()
    assert body.split("\n")[1].startswith("## ⚠️ lvegit: not verified")
    assert "changes what its check runs on (tools/setup/run.sh)" in body.replace("\\", "")


def test_a_check_that_comments_on_a_pull_request_changing_its_workflow_says_it_is_unverified(
    pull: tuple[GitRepo, str, str], github_server: GitHubServer, action: Any
) -> None:
    """The live job comments from the check, which runs the pull request's workflow: where the pull
    request changes it, the comment cannot be lvegit's word either."""
    git, base, _head = pull
    (git.root / ".github/workflows").mkdir(parents=True)
    (git.root / ".github/workflows/lvegit-check.yml").write_text("name: LVE check\n")
    head = git.commit("workflow")
    github_server.pulls[7] = head
    action("pull_request", pull_request_payload(7, base, head), git.root, comment="true", github_token="t")
    [body] = [c["body"] for c in github_server.comments[7]]
    assert body.split("\n")[1].startswith("## ⚠️ lvegit: not verified")
    assert "changes what its check runs on (.github/workflows/lvegit-check.yml)" in body.replace("\\", "")


@pytest.mark.parametrize("committed", ["a results file", "a link to one"])
def test_results_the_pull_request_commits_cannot_name_its_head(
    pull: tuple[GitRepo, str, str], github_server: GitHubServer, action: Any, tmp_path: Path, committed: str
) -> None:
    """The base branch's check workflow uploads lvegit-results/ however its lvegit step ended: a pull
    request can commit a forged results file there (or the folder as a link to one, so that the check
    writes nothing), but a file in a commit cannot name that commit's sha: it names an earlier head at
    best, and the comment says its verdicts are unverified."""
    git, base, earlier = pull
    artifact, _comment = two_stages(action, github_server, git, base, earlier, tmp_path)
    forge_all_passed(artifact)
    forged = git.root / ("lvegit-results" if committed == "a results file" else "repository/notes")
    shutil.copytree(artifact, forged)
    if committed == "a link to one":
        (git.root / "lvegit-results").symlink_to("repository/notes")
    head = git.commit("results of its own")
    github_pull(github_server, 9, git, base, head)
    if committed == "a link to one":
        check = action("pull_request", pull_request_payload(9, base, head, fork=True), git.root)
        assert check.code == 2 and "is a link" in check.err  # the check wrote nothing
    shutil.rmtree(artifact)
    shutil.copytree(git.root / "lvegit-results", artifact)  # what upload-artifact takes, links followed
    trusted = tmp_path / "trusted"
    trusted.mkdir(exist_ok=True)
    payload = workflow_run_payload(head, None)
    result = action(
        "workflow_run", payload, trusted, mode="comment", results_dir=str(artifact), github_token="t"
    )
    assert result.code == 0, result.err
    [body] = [c["body"] for c in github_server.comments[9]]
    assert body.split("\n")[1].startswith("## ⚠️ lvegit: not verified")
    assert f"they are for the commit {earlier[:12]}, not the pull request's head {head[:12]}" in body


@pytest.mark.parametrize(
    "lie", ["an LVE left out", "an LVE it does not change", "a removal", "a new LVE as old"]
)
def test_the_comment_stage_derives_the_changed_lves_again_and_names_the_difference(
    pull: tuple[GitRepo, str, str], github_server: GitHubServer, action: Any, tmp_path: Path, lie: str
) -> None:
    """From the pull request's files and its head's tree (GitHub's word, no code run), the comment stage
    finds the LVEs it changes and removes, and names each one the results leave out or add."""
    git, base, head = pull
    artifact, comment = two_stages(action, github_server, git, base, head, tmp_path)
    data = json.loads((artifact / "results.json").read_text())
    a, b = "repository/cat/a/openai--gpt-4o-mini", "repository/cat/b/openai--gpt-4o-mini"
    if lie == "an LVE left out":
        lves = [lve for lve in data["lves"] if lve["path"] != a]
        forge_all_passed(artifact, lves=lves)
        why = f"they leave out LVEs this pull request changes: {a}"
    elif lie == "an LVE it does not change":
        forge_all_passed(artifact, lves=[*data["lves"], {**data["lves"][0], "path": b}])
        why = f"they name LVEs this pull request does not change: {b}"
    elif lie == "a removal":
        forge_all_passed(artifact, removed=[b])
        why = f"their removed LVEs ({b}) are not the ones this pull request removes (none)"
    else:
        [new] = [lve for lve in data["lves"] if lve["change"]["status"] == "added"]
        new["change"]["status"] = "modified"
        forge_all_passed(artifact, lves=data["lves"])
        why = f"whether these LVEs are new or renamed: {new['path']}"
    body = comment()
    assert body.split("\n")[1].startswith("## ⚠️ lvegit: not verified")
    assert why in body.replace("\\", "")


def test_hostile_strings_are_escaped_in_comment_annotations_and_outputs(
    pull: tuple[GitRepo, str, str], github_server: GitHubServer, action: Any, tmp_path: Path
) -> None:
    git, base, _head = pull
    nasty = "<img src=x onerror=alert(1)> @org/maintainers ```\n::set-output name=passed::true\x1b[2J"
    RepoBuilder(git.root).lve(
        "cat/a",
        {"tags": [{"name": "severity", "value": nasty}], nasty: 1},  # an unknown key: a warning naming it raw
        instances={"i.jsonl": [instance("3", True, a=1, b=2)]},
    )
    head2 = git.commit("nasty")
    github_server.pulls[5] = head2
    result = action(
        "pull_request", pull_request_payload(5, base, head2), git.root, comment="true", github_token="t"
    )
    body = github_server.comments[5][0]["body"]
    assert "<img" not in body and "&lt;img" in body and "@\u200borg" in body
    assert "\x1b" not in body
    lines = result.out.splitlines()
    error = next(line for line in lines if line.startswith("::error") and "severity" in line)
    assert "\\n::set-output" in error  # the message quotes the value with repr()
    warning = next(line for line in lines if line.startswith("::warning") and "unknown key" in line)
    assert "%0A::set-output name=passed::true" in warning  # a raw newline, escaped for the workflow command
    assert not any(line.startswith("::set-output") for line in result.out.splitlines())
    assert outputs(tmp_path)["passed"] == "false"


def test_oversized_summary_is_truncated_under_the_limit(
    pull: tuple[GitRepo, str, str], github_server: GitHubServer, action: Any
) -> None:
    git, base, _head = pull
    lves = RepoBuilder(git.root)
    long_response = "x" * 3000
    for index in range(60):
        lves.lve(
            f"bulk/lve{index:02}",
            {"checker_args": {"checker_name": "RegexChecker", "pattern": "x", "match_safe": False}},
            instances={"i.jsonl": [instance(long_response, True, a=1, b=2) for _ in range(20)]},
        )
    head2 = git.commit("bulk")
    github_server.pulls[6] = head2
    action("pull_request", pull_request_payload(6, base, head2), git.root, comment="true", github_token="t")
    body = github_server.comments[6][0]["body"]
    assert len(body) <= COMMENT_LIMIT
    # Detail goes first: the prompts and responses, then whole sections; every LVE's verdicts stay.
    assert "Prompts and responses of added instances are left out to fit" in body
    assert "more LVE sections are in the job summary and the results file" in body
    assert sum(line.startswith("| [repository/") for line in body.splitlines()) == 62
    assert ": prompt and response</summary>" not in body


def test_rate_limits_are_waited_out_and_retried(
    pull: tuple[GitRepo, str, str], github_server: GitHubServer, action: Any, retry_waits: list[float]
) -> None:
    git, base, head = pull
    github_server.pulls[8] = head
    reset = str(int(time.time()) + 30)
    github_server.faults = [
        ("status", 429, {"Retry-After": "1"}, "You have exceeded a secondary rate limit"),
        (
            "status",
            403,
            {"x-ratelimit-remaining": "0", "x-ratelimit-limit": "5000", "x-ratelimit-reset": reset},
            "API rate limit exceeded for installation",
        ),
    ]
    result = action(
        "pull_request", pull_request_payload(8, base, head), git.root, comment="true", github_token="t"
    )
    assert "created comment" in result.out, result.err
    assert len(github_server.comments[8]) == 1
    # Retry-After is waited as given; the primary limit until its reset (about 30 s, and a little more).
    assert retry_waits[0] == 1.0 and 25 <= retry_waits[1] <= 32, retry_waits


def test_pull_request_gone_and_body_refused(
    pull: tuple[GitRepo, str, str], github_server: GitHubServer, action: Any
) -> None:
    git, base, head = pull
    gone = action(
        "pull_request", pull_request_payload(99, base, head), git.root, comment="true", github_token="t"
    )
    # A clear error, never "unexpected": the number or the token is wrong (2); GitHub refused the body (1).
    assert gone.code == 2 and "not found (404): the pull request is gone" in gone.err
    assert "unexpected" not in gone.err
    github_server.pulls[99] = head
    github_server.max_body = 100
    refused = action(
        "pull_request",
        pull_request_payload(99, base, head),
        git.root,
        comment="true",
        github_token="t",
        results_dir="r2",
    )
    assert refused.code == 4 and "GitHub refused the body (422)" in refused.err  # a service failed
    assert "unexpected" not in refused.err


def test_live_rerun_appends_instances_and_writes_a_patch(
    pull: tuple[GitRepo, str, str], openai_server: Running, action: Any
) -> None:
    git, base, head = pull
    openai_server.state.answer = lambda body: "4"
    result = action(
        "pull_request",
        pull_request_payload(2, base, head),
        git.root,
        keep_env="OPENAI_API_KEY OPENAI_BASE_URL",
        fail_on="invalid",
    )
    assert result.code == 0, result.out
    data = json.loads((git.root / "lvegit-results/results.json").read_text())
    assert data["live"] == {"enabled": True, "reason": "enabled"}
    assert data["totals"]["appended"] == 3
    jsonschema.validate(
        data, json.loads(schema_file("results", results.VERSION).read_text())
    )  # live and appended records too
    patch = (git.root / "lvegit-results/instances.patch").read_text()
    assert patch.count("\n+{") == 3 and "cat/a/openai--gpt-4o-mini/instances/i.jsonl" in patch
    # The maintainer pushes the appended instances, then a commit that touches no LVE: each synchronize
    # event re-runs the pull request's recordings and appends nothing more.
    for message in ("appended instances", "docs only"):
        if message == "docs only":
            (git.root / "NOTES.md").write_text("notes\n")
        head = git.commit(message)
        again = action(
            "pull_request",
            pull_request_payload(2, base, head),
            git.root,
            keep_env="OPENAI_API_KEY OPENAI_BASE_URL",
            fail_on="invalid",
            results_dir=message.replace(" ", "-"),
        )
        assert again.code == 0, again.out
        data = json.loads((git.root / message.replace(" ", "-") / "results.json").read_text())
        assert data["totals"]["appended"] == 0
        assert git.git("status", "--porcelain", "--", "repository") == ""


def test_push_and_dispatch_events(pull: tuple[GitRepo, str, str], action: Any) -> None:
    git, base, head = pull
    pushed = action("push", {"before": base, "after": head, "ref": "refs/heads/pr"}, git.root, fail_on="none")
    assert pushed.code == 0
    data = json.loads((git.root / "lvegit-results/results.json").read_text())
    assert data["totals"]["changed"] == 2
    assert (
        action("push", {"before": "0" * 40, "after": head}, git.root, fail_on="none", results_dir="all").code
        == 0
    )
    assert json.loads((git.root / "all/results.json").read_text())["totals"]["changed"] == 3
    dispatched = action(
        "workflow_dispatch", {"inputs": {"base": "main"}}, git.root, fail_on="none", results_dir="dispatch"
    )
    assert dispatched.code == 0
    assert json.loads((git.root / "dispatch/results.json").read_text())["totals"]["changed"] == 2


def test_the_action_tells_git_to_trust_the_workspace_without_changing_its_environment(
    pull: tuple[GitRepo, str, str], action: Any
) -> None:
    git, base, head = pull
    before = dict(os.environ)
    assert action("pull_request", pull_request_payload(5, base, head), git.root, fail_on="none").code == 0
    after = dict(os.environ)
    assert (after["GIT_CONFIG_COUNT"], "GIT_CONFIG_KEY_0" in after) == ("0", False)
    set_by_the_job = ("GITHUB_", "INPUT_", "GIT_CONFIG_COUNT")  # the fixture's, as GitHub sets them
    assert {k: v for k, v in after.items() if not k.startswith(set_by_the_job)} == {
        k: v for k, v in before.items() if not k.startswith(set_by_the_job)
    }
    assert current().git_environment == (
        ("GIT_CONFIG_KEY_0", "safe.directory"),
        ("GIT_CONFIG_VALUE_0", str(git.root)),
        ("GIT_CONFIG_COUNT", "1"),
    )


OPENED: list[str] | None = None  # the files this process opens while a test records them


def _record_opens(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and OPENED is not None and isinstance(args[0], (str, bytes, os.PathLike)):
        OPENED.append(os.fsdecode(args[0]))


sys.addaudithook(_record_opens)


@pytest.mark.parametrize("live", ["false", "true"])
def test_the_check_loads_and_reads_each_changed_lve_once(
    pull: tuple[GitRepo, str, str],
    action: Any,
    monkeypatch: pytest.MonkeyPatch,
    openai_server: Running,
    live: str,
) -> None:
    """Counted in the Action's check of a pull request (a cold cache; with live runs, the re-runs are
    planned too): how often each changed LVE is loaded (its test.json parsed into an LVE) and how often
    its test.json is opened."""
    global OPENED
    git, base, head = pull
    openai_server.state.answer = lambda body: "4"
    loads: list[str] = []
    build = spec._build
    monkeypatch.setattr(
        spec,
        "_build",
        lambda repo, lve_dir, rel, *rest: loads.append(rel) or build(repo, lve_dir, rel, *rest),
    )
    OPENED = []
    try:
        keep = "OPENAI_API_KEY OPENAI_BASE_URL"
        ran = action("pull_request", pull_request_payload(5, base, head), git.root, live=live, keep_env=keep)
        assert ran.code == 1
        opened = [path for path in OPENED if path.endswith("/test.json")]
    finally:
        OPENED = None
    for lve in ("repository/cat/a/openai--gpt-4o-mini", "repository/cat/c/openai--gpt-4o-mini"):
        assert loads.count(lve) == 1, loads
        assert sum(path.endswith(f"{lve}/test.json") for path in opened) == 1, opened


def test_bad_inputs_and_events(pull: tuple[GitRepo, str, str], action: Any) -> None:
    git, base, head = pull
    payload = pull_request_payload(1, base, head)
    assert "input 'fail-on'" in action("pull_request", payload, git.root, fail_on="sometimes").err
    assert "input 'live'" in action("pull_request", payload, git.root, live="maybe").err
    assert "handles pull_request" in action("issues", payload, git.root).err
    assert "commenting needs a token" in action("pull_request", payload, git.root, comment="true").err


def test_a_base_input_that_git_would_read_as_an_option_is_a_usage_error(
    pull: tuple[GitRepo, str, str], action: Any, tmp_path: Path
) -> None:
    """The `base` input reached `git fetch` as an option: `--upload-pack=...` runs a program."""
    git, base, head = pull
    flag = tmp_path / "ran"
    payload = pull_request_payload(1, base, head)
    refused = action("pull_request", payload, git.root, base=f"--upload-pack=touch {flag}")
    assert refused.code == 2 and "is not a git revision (a revision never starts with '-')" in refused.err
    assert not flag.exists()


def test_a_pull_request_cannot_write_the_verdicts_trusted_runs_read(
    pull: tuple[GitRepo, str, str], action: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cache a push to the default branch writes (and later runs restore) gets no entry from a pull
    request's check, which only reads it; a cache committed into the pull request is not read at all."""
    git, base, head = pull
    shared = tmp_path / "restored-cache"
    monkeypatch.setenv("LVEGIT_CACHE_DIR", str(shared))
    assert action("pull_request", pull_request_payload(3, base, head), git.root, fail_on="none").code == 0
    assert not shared.exists() or list(shared.rglob("*/*/*")) == []
    assert (
        action("push", {"before": base, "after": head}, git.root, fail_on="none", results_dir="push").code
        == 0
    )
    entries = sorted(shared.glob("v1/*/*"))
    assert entries  # the trusted run stored its verdicts
    before = {entry: entry.read_bytes() for entry in entries}
    assert (
        action(
            "pull_request", pull_request_payload(3, base, head), git.root, fail_on="none", results_dir="again"
        ).code
        == 0
    )
    assert {entry: entry.read_bytes() for entry in sorted(shared.glob("v1/*/*"))} == before
    # LVEs whose checker loads a model stack replay in a process of their own: it only reads too.
    pii = {
        "checker_args": {"checker_name": "PII_Checker", "entities": ["EMAIL_ADDRESS"], "spacy_model": "blank"}
    }
    RepoBuilder(git.root).lve(
        "cat/pii", pii, instances={"i.jsonl": [instance("mail jane@example.com", False, a=1, b=2)]}
    )
    pii_head = git.commit("a PII LVE")
    before = {entry: entry.read_bytes() for entry in sorted(shared.glob("v1/*/*"))}
    assert (
        action(
            "pull_request",
            pull_request_payload(3, base, pii_head),
            git.root,
            fail_on="none",
            results_dir="pii",
        ).code
        == 0
    )
    assert {entry: entry.read_bytes() for entry in sorted(shared.glob("v1/*/*"))} == before
    # A pull request that commits a cache of its own: the check says so and judges every instance.
    monkeypatch.delenv("LVEGIT_CACHE_DIR")
    forged = git.root / ".lvegit-cache/v1/00/" / ("0" * 64)
    forged.parent.mkdir(parents=True)
    forged.write_text('{"verdict": true, "note": null}')
    forged_head = git.commit("a cache of its own")
    result = action(
        "pull_request",
        pull_request_payload(3, base, forged_head),
        git.root,
        fail_on="none",
        results_dir="forged",
    )
    assert "is tracked by git, so its verdicts could be forged: not used" in result.out


def review_comment(action: Any, github_server: GitHubServer, git: GitRepo, number: int, **inputs: str) -> str:
    """The verdict comment of a pull request at git's HEAD against main, with short shas for reading."""
    base, head = git.git("rev-parse", "main").strip(), git.git("rev-parse", "HEAD").strip()
    github_server.pulls[number] = head
    action(
        "pull_request",
        pull_request_payload(number, base, head),
        git.root,
        comment="true",
        github_token="t",
        **inputs,
    )
    [comment] = github_server.comments[number]
    return str(comment["body"]).replace(head, "HEAD").replace(head[:12], "HEAD").replace(base[:12], "BASE")


def test_the_comment_shows_the_instances_a_pull_request_adds(
    tmp_path: Path, github_server: GitHubServer, openai_server: Running, action: Any, cli: Any
) -> None:
    git = GitRepo(tmp_path / "workspace")
    lves = RepoBuilder(git.root)
    old = [instance("3", True, a=1, b=2), instance("5", True, a=2, b=3)]
    lves.lve("cat/a", instances={"i.jsonl": old})
    assert cli("readme", "--all", cwd=git.root).code == 0
    git.commit("base")
    git.git("checkout", "-q", "-b", "pr")
    added = [instance("4", True, a=2, b=2), instance("7", False, a=3, b=3)]
    lves.lve("cat/a", instances={"i.jsonl": old + added})
    assert cli("readme", "--all", cwd=git.root).out.startswith(
        "repository/cat/a/openai--gpt-4o-mini/README.md: refreshed"
    )
    git.commit("two instances")
    openai_server.state.answer = lambda body: str(
        sum(map(int, re.findall(r"\d+", body["messages"][-1]["content"])))
    )
    body = review_comment(
        action,
        github_server,
        git,
        3,
        keep_env="OPENAI_API_KEY OPENAI_BASE_URL",
        repeat="3",
        append="false",
        fail_on="invalid,mismatch,error,live-disagree",
    )
    link = "https://github.example/org/lves/blob/HEAD/repository/cat/a/openai--gpt-4o-mini"
    path = "repository/cat/a/openai\\-\\-gpt\\-4o\\-mini"
    assert body.split("\n") == [
        MARKER,
        "## ❌ lvegit: 1 instance whose live verdict differs",
        "",
        f"<sub>head `HEAD` · base `BASE` · 1 changed LVE · lvegit {markdown(__version__)}</sub>",
        "",
        "| LVE | Change | Validation | Replay | Live re-run | Appended |",
        "|---|---|---|---|---|---|",
        f"| [{path}]({link}) | 2 instances added; file README\\.md | ✅ valid | 4 reproduced | 0/12 unsafe, "
        "❌ 1 differ | 0 |",
        "",
        f"#### ❌ {path}",
        "",
        "- live: repository/cat/a/openai\\-\\-gpt\\-4o\\-mini/instances/i\\.jsonl:4: recorded passed=False, "
        "0/3 unsafe (95% CI 0%-56%)",
        "",
        "Changed: file README\\.md.",
        "Instances: 2 instances added.",
        "",
        "| Added instance | Recorded | Replayed | Live re-run |",
        "|---|---|---|---|",
        "| i\\.jsonl:3 | safe | ✅ reproduced | 0/3 unsafe (95% CI 0%-56%) |",
        "| i\\.jsonl:4 | unsafe | ✅ reproduced | ❌ 0/3 unsafe (95% CI 0%-56%) |",
        "",
        "2 unchanged instances: 2 reproduced.",
        "",
        "<details><summary>repository/cat/a/openai--gpt-4o-mini/instances/i.jsonl:3: prompt and response</summary>",
        "",
        "Prompt:",
        "",
        "```text",
        "user: Compute 2 + 2.",
        "```",
        "",
        "Response:",
        "",
        "```text",
        "4",
        "```",
        "",
        "</details>",
        "<details><summary>repository/cat/a/openai--gpt-4o-mini/instances/i.jsonl:4: prompt and response</summary>",
        "",
        "Prompt:",
        "",
        "```text",
        "user: Compute 3 + 3.",
        "```",
        "",
        "Response:",
        "",
        "```text",
        "7",
        "```",
        "",
        "</details>",
    ]


def test_the_comment_says_what_a_pull_request_edited_renamed_and_removed(
    tmp_path: Path, github_server: GitHubServer, action: Any
) -> None:
    git = GitRepo(tmp_path / "workspace")
    lves = RepoBuilder(git.root)
    rows = [instance("3", True, a=1, b=2)]
    lves.lve("cat/prompt", instances={"i.jsonl": rows})
    lves.lve(
        "cat/code", {"checker_args": {"checker_name": "Checker"}}, files={"checker/checker.py": "A = 1\n"}
    )
    lves.lve("cat/old", instances={"i.jsonl": rows})
    lves.lve("cat/gone", {"description": "another"}, instances={"i.jsonl": [instance("5", True, a=2, b=3)]})
    git.commit("base")
    git.git("checkout", "-q", "-b", "pr")
    lves.lve("cat/prompt", {"prompt": [{"role": "user", "content": "Add {a} and {b}."}], "tags": []})
    (lves.root / "repository/cat/code/openai--gpt-4o-mini/checker/checker.py").write_text("A = 2\n")
    git.git("mv", "repository/cat/old", "repository/cat/new")
    git.git("rm", "-q", "-r", "repository/cat/gone")
    (lves.root / "repository/cat/prompt/openai--gpt-4o-mini/instances/i.jsonl").write_text("")
    git.commit("edits")
    body = review_comment(action, github_server, git, 4)
    table = [line.split(" | ", 2)[1] for line in body.split("\n") if line.startswith("| [repository/")]
    assert table == [
        "checker code checker/checker\\.py",
        "renamed from repository/cat/old/openai\\-\\-gpt\\-4o\\-mini",
        "1 instance removed; test\\.json: prompt, tags",
    ]
    assert "| repository/cat/gone/openai\\-\\-gpt\\-4o\\-mini | removed | — | — | — | — |" in body
    sections = body.split("#### ")[1:]
    assert sections[-1].split("\n") == [
        "✅ repository/cat/prompt/openai\\-\\-gpt\\-4o\\-mini",
        "",
        "Changed: test\\.json: prompt, tags.",
        "Instances: 1 instance removed.",
        "",
        "⚠️ README\\.md is missing: run lvegit readme repository/cat/prompt/openai\\-\\-gpt\\-4o\\-mini",
    ]


def test_one_cause_is_one_line_on_a_pull_request_with_five_invalid_lves(
    action: Any, github_server: GitHubServer, tmp_path: Path
) -> None:
    """Each invalid LVE's finding is said once (its instances' replay errors only repeat it), every
    failing LVE gets an annotation before any gets a second, and each section says why it fails first."""
    git = GitRepo(tmp_path / "workspace")
    lves = RepoBuilder(git.root)
    lves.lve("cat/keep", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    git.commit("base")
    git.git("checkout", "-q", "-b", "pr")
    lves.lve("bad/a", instances={"i.jsonl": [instance("3", True, a=1) for _ in range(8)]})  # no b: 8 errors
    for name in ("b", "c", "d", "e"):
        lves.lve(
            f"bad/{name}",
            {"checker_args": {"checker_name": "Nope"}},
            instances={"i.jsonl": [instance("3", True, a=1, b=2)] * 2},
        )
    head = git.commit("five invalid LVEs")
    github_server.pulls[5] = head
    payload = pull_request_payload(5, git.git("rev-parse", "main"), head)
    result = action("pull_request", payload, git.root, comment="true", github_token="t")
    assert result.code == 1, result.err
    [comment] = github_server.comments[5]
    body = str(comment["body"])
    headline = body.split("\n")[1]
    assert headline == "## ❌ lvegit: 5 invalid LVEs", headline
    assert "instances that could not be replayed" not in body
    sections = body.split("#### ")[1:]
    assert [s.split("\n")[0] for s in sections] == [
        f"❌ repository/bad/{name}/openai\\-\\-gpt\\-4o\\-mini" for name in "abcde"
    ]
    assert (
        sections[1].split("\n")[2].startswith("- repository/bad/b/openai\\-\\-gpt\\-4o\\-mini/test\\.json:5")
    )
    assert "<details><summary>Findings" not in body
    annotations = [line for line in result.out.splitlines() if line.startswith("::error ")]
    firsts = [next(a for a in annotations if f"bad/{name}/" in a) for name in "abcde"]
    assert annotations[:5] == firsts  # one per failing LVE before any second
    assert "| ❌ 8 errors | not replayed |" in body and "| ❌ 1 error | not replayed |" in body
    summary = (tmp_path / "summary.md").read_text()
    assert "## ❌ lvegit: 5 invalid LVEs" in summary


def test_a_pull_request_that_only_removes_lves_gets_a_table(
    action: Any, github_server: GitHubServer, tmp_path: Path
) -> None:
    git = GitRepo(tmp_path / "workspace")
    lves = RepoBuilder(git.root)
    lves.lve("cat/keep", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    lves.lve("cat/gone", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    git.commit("base")
    git.git("checkout", "-q", "-b", "pr")
    git.git("rm", "-q", "-r", "repository/cat/gone")
    git.commit("remove one")
    body = review_comment(action, github_server, git, 6)
    assert "| LVE | Change | Validation | Replay | Live re-run | Appended |" in body
    assert "| repository/cat/gone/openai\\-\\-gpt\\-4o\\-mini | removed | — | — | — | — |" in body


def test_with_fail_on_none_findings_are_warnings(pull: tuple[GitRepo, str, str], action: Any) -> None:
    git, base, head = pull
    result = action(
        "pull_request", pull_request_payload(5, base, head), git.root, live="false", fail_on="none"
    )
    assert result.code == 0
    annotations = [line for line in result.out.splitlines() if line.startswith("::")]
    assert not [a for a in annotations if a.startswith("::error")]
    assert "::warning file=repository/cat/a/openai--gpt-4o-mini/instances/i.jsonl,line=2" in result.out


def test_check_mode_without_a_model_key_imports_no_model_client(
    pull: tuple[GitRepo, str, str], tmp_path: Path
) -> None:
    """A pull request's check holds no key: deciding that live runs are off must not import openai (1.3 s
    of a 1.8 s check of one model-free LVE, before)."""
    git, base, head = pull
    environment = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        **github_environment("pull_request", pull_request_payload(5, base, head), git.root, tmp_path),
    }
    command = [sys.executable, "-X", "importtime", "-m", "lvegit", "action"]
    ran = subprocess.run(command, cwd=git.root, env=environment, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 1, ran.stderr
    imported = [line.rsplit("|", 1)[-1].strip() for line in ran.stderr.splitlines() if "import time:" in line]
    assert "openai" not in imported and "lvegit.run.rerun" in imported  # live runs were considered (auto)


def test_the_comment_shows_each_changed_lves_run_history(
    action: Any, github_server: GitHubServer, tmp_path: Path
) -> None:
    """An LVE the pull request changes: its status on each model of history/ (fixed in, regressed, never
    run for a new LVE); a broken history file is named in the comment and the check goes on."""
    git, history, _old = history_pull(tmp_path)
    RepoBuilder(git.root).lve("cat/new", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    git.commit("pr")
    body = review_comment(action, github_server, git, 9)
    assert "| Run history: model | Status | Now |" in body
    assert "| vendor/m | ✓ fixed in m\\-v2 \\(2026\\-09\\-14\\) | 0/80 unsafe on m\\-v2 |" in body
    assert "| vendor/m | - never run |  |" in body  # the new LVE
    data = json.loads((git.root / "lvegit-results/results.json").read_text())
    assert data["history"] is None
    assert [s["state"] for lve in data["lves"] for s in lve["history"]] == ["never-run", "fixed"]
    assert "Severity: 0\\.0 none: reproduces on no model now, as of" in body  # fixed everywhere
    assert [lve["severity"] for lve in data["lves"]] == [
        None,
        "0.0 none: reproduces on no model now, as of 2026-09-14",
    ]

    # A broken file on the base branch (where a pull request's check reads the history) is named, and
    # the check goes on.
    git.git("checkout", "-q", "main")
    (history / "2026-09-21T030000Z-0123456789abcdef.parquet").write_bytes(b"not parquet")
    git.commit("a broken history file")
    git.git("checkout", "-q", "pr")
    git.git("merge", "-q", "--no-edit", "main")
    github_server.comments.clear()
    body = review_comment(action, github_server, git, 9, results_dir="second")
    assert "⚠️ The run history could not be read: " in body and "0123456789abcdef\\.parquet" in body
    assert "| LVE | Change | Validation |" in body  # the check went on
    assert (
        "| vendor/m | ✓ fixed in m\\-v2 \\(2026\\-09\\-14\\) | 0/80 unsafe on m\\-v2 |" in body
    )  # the other runs


def corrupt(path: Path, column: str | None) -> None:
    """Break a run file as a disk or a cut upload can: cut it in half (None), or zero the pages of one
    column, leaving its footer whole (every check that reads no page passes)."""
    import pyarrow.parquet as pq

    data = bytearray(path.read_bytes())
    if column is None:
        path.write_bytes(bytes(data[: len(data) // 2]))
        return
    metadata = pq.read_metadata(path)
    names = [metadata.schema.column(i).name for i in range(metadata.num_columns)]
    chunk = metadata.row_group(0).column(names.index(column))
    start = chunk.dictionary_page_offset or chunk.data_page_offset
    data[start : start + chunk.total_compressed_size] = bytes(chunk.total_compressed_size)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("column", [None, "run_at", "lve", "unsafe"])
def test_the_comment_names_an_unreadable_run_file_and_shows_the_other_runs(
    action: Any, github_server: GitHubServer, cli: Any, tmp_path: Path, column: str | None
) -> None:
    """A run file of the base branch's history cut short, or with a corrupt page behind a whole footer:
    the comment names it (as status does) and shows the status of the other runs; the check goes on.
    A corrupt page of run_at ended the check with lvegit's own error (exit 3) and no comment; one of lve
    or unsafe dropped the whole history with an error that named no file."""
    git, history, _old = history_pull(tmp_path)
    git.commit("pr")
    git.git("checkout", "-q", "main")
    [latest] = sorted(history.glob("2026-09-14*"))
    corrupt(latest, column)
    git.commit("a broken run file")
    status = cli("status", cwd=git.root)
    assert status.code == 1 and f"{latest.name}: not a Parquet file lvegit can read" in status.err
    assert "(1 run): 1 reproduces" in status.out  # the other run
    git.git("checkout", "-q", "pr")
    git.git("merge", "-q", "--no-edit", "main")
    body = review_comment(action, github_server, git, 9).replace("\\", "")
    assert f"⚠️ The run history could not be read: history/{latest.name}: not a Parquet file" in body
    assert "| vendor/m | ● reproduces" in body  # the other run, which says it reproduces on m-v1


def history_pull(tmp_path: Path) -> tuple[GitRepo, Path, str]:
    """A base branch whose history says the LVE was fixed in m-v2, and a branch pr that adds an instance to
    it (not committed yet); the history folder and the LVE's path."""
    git = GitRepo(tmp_path / "workspace")
    lves = RepoBuilder(git.root)
    lves.lve("cat/old", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    old = "repository/cat/old/openai--gpt-4o-mini"
    history = git.root / "history"
    history_run(history, "2026-09-07T03:00:00Z", {(old, "vendor/m", "m-v1"): (10, 0)})
    history_run(history, "2026-09-14T03:00:00Z", {(old, "vendor/m", "m-v2"): (0, 80)})
    git.commit("base")
    git.git("checkout", "-q", "-b", "pr")
    lves.lve("cat/old", instances={"i.jsonl": [instance("3", True, a=1, b=2), instance("4", True, a=1, b=3)]})
    return git, history, old


@pytest.mark.parametrize("forgery", ["new run file", "rewritten run file", "link out"])
def test_a_pull_request_cannot_rewrite_the_history_its_comment_reads(
    action: Any, github_server: GitHubServer, tmp_path: Path, forgery: str
) -> None:
    """A forged "reproduces again" run, an existing run rewritten in place with flipped verdicts, and a
    history folder that is a link to a history of the contributor's making: the comment shows the base
    branch's history (fixed in m-v2) and says that the pull request changed history/."""
    git, history, old = history_pull(tmp_path)
    if forgery == "new run file":
        history_run(history, "2026-09-21T03:00:00Z", {(old, "vendor/m", "m-v3"): (50, 0)})
    elif forgery == "rewritten run file":
        [latest] = sorted(history.glob("2026-09-14*"))
        name = latest.name
        latest.unlink()
        history_run(history, "2026-09-14T03:00:00Z", {(old, "vendor/m", "m-v2"): (80, 0)})
        [rewritten] = sorted(history.glob("2026-09-14*"))
        rewritten.rename(history / name)  # the same name, other verdicts
    else:
        forged = tmp_path / "forged"
        history_run(forged, "2026-09-21T03:00:00Z", {(old, "vendor/m", "m-v3"): (50, 0)})
        git.git("rm", "-q", "-r", "history")
        history.symlink_to(forged)
    git.commit("forged history")
    body = review_comment(action, github_server, git, 9)
    assert "| vendor/m | ✓ fixed in m\\-v2 \\(2026\\-09\\-14\\) | 0/80 unsafe on m\\-v2 |" in body
    assert "This pull request changes history/: its files are not read" in body.replace("\\", "")
    assert "the base commit BASE" in body.replace("\\", "")


@pytest.mark.parametrize("made", ["submodule", "link"])
def test_a_pull_request_that_makes_the_history_folder_a_submodule_or_a_link_fails_its_check(
    action: Any, github_server: GitHubServer, tmp_path: Path, made: str
) -> None:
    """history/ committed as a submodule (checked out, as a job with submodules would: its `.git` is a
    file) or as a link, each holding a forged "reproduces again" run: never read as the history's
    checkout; the comment names the refusal and shows the base branch's history."""
    git, history, old = history_pull(tmp_path)
    forged = GitRepo(tmp_path / "forged")
    history_run(forged.root, "2026-09-21T03:00:00Z", {(old, "vendor/m", "m-v3"): (50, 0)})
    forged.commit("forged history")
    git.git("rm", "-q", "-r", "history")
    if made == "submodule":
        modules = git.root / ".git" / "modules" / "history"
        modules.parent.mkdir()
        git.git("clone", "-q", f"--separate-git-dir={modules}", f"file://{forged.root}", "history")
        assert (history / ".git").is_file()
    else:
        history.symlink_to(forged.root)
    git.commit("history from elsewhere")
    assert git.git("ls-tree", "HEAD", "history").split()[0] == ("160000" if made == "submodule" else "120000")
    body = review_comment(action, github_server, git, 9).replace("\\", "")
    assert (
        f"this pull request makes history/ a {made}: the run history is never read from a submodule" in body
    )
    assert "| vendor/m | ✓ fixed in m-v2 (2026-09-14) | 0/80 unsafe on m-v2 |" in body
    data = json.loads((git.root / "lvegit-results/results.json").read_text())
    assert data["passed"] is False


def test_a_history_folder_linked_out_of_the_repository_is_refused(cli: Any, tmp_path: Path) -> None:
    git, history, old = history_pull(tmp_path)
    forged = tmp_path / "forged"
    history_run(forged, "2026-09-21T03:00:00Z", {(old, "vendor/m", "m-v3"): (50, 0)})
    git.git("rm", "-q", "-r", "history")
    history.symlink_to(forged)
    for command in (["status", "--all"], ["history", "list"]):
        result = cli(*command, cwd=git.root)
        assert result.code == 2
        assert "history: the history folder leads out of the repository" in result.err
    assert cli("status", "--all", "--history", str(forged), cwd=git.root).code == 0  # chosen by name


@pytest.mark.parametrize("key_variable", ["OPENAI_API_KEY", "INPUT_GITHUB-TOKEN", "GITHUB_TOKEN"])
def test_a_pull_request_cannot_route_the_jobs_keys_to_its_own_server(
    pull: tuple[GitRepo, str, str], openai_server: Running, tmp_path: Path, key_variable: str
) -> None:
    """The live stage holds a model key and a token. A pull request's lvegit.toml sends the LVE's model to
    a server of its choosing with a key variable of its choosing: a real `lvegit action` process asks the
    base branch's route (the maintainers' server) and the contributor's server receives nothing."""
    git, base, _head = pull
    attacker = OpenAIServer()
    for attacker_server in serve(attacker):
        (git.root / "lvegit.toml").write_text(
            '[models."openai/gpt-4o-mini"]\n'
            'backend = "openai"\n'
            f'base_url = "{attacker_server.url}"\n'
            f'api_key_env = "{key_variable}"\n'
        )
        head = git.commit("route the model elsewhere")
        openai_server.state.answer = lambda body: "4"
        environment = {
            "PATH": os.environ["PATH"],
            "HOME": str(tmp_path),
            "PYTHONDONTWRITEBYTECODE": "1",
            "INPUT_LIVE": "true",
            "INPUT_FAIL-ON": "invalid",
            "INPUT_GITHUB-TOKEN": "ghp_job_token_of_the_live_stage",
            "GITHUB_TOKEN": "ghp_job_token_of_the_live_stage",
            "OPENAI_API_KEY": "sk-live-stage-model-key",
            "OPENAI_BASE_URL": openai_server.url,
            **github_environment("pull_request", pull_request_payload(5, base, head), git.root, tmp_path),
        }
        command = [sys.executable, "-m", "lvegit", "action"]
        ran = subprocess.run(
            command, cwd=git.root, env=environment, capture_output=True, text=True, timeout=120
        )
        assert ran.returncode == 0, ran.stdout + ran.stderr
        assert attacker.requests == [] and attacker.headers == []
        assert openai_server.state.requests  # the live re-run went where the base branch routes it
        document = results.load(git.root / "lvegit-results/results.json")
        assert document.live.enabled
        assert any("This pull request changes lvegit.toml" in note for note in document.trust)


def forged_judgement_pull(tmp_path: Path, forged: dict[str, Any]) -> tuple[GitRepo, str, str]:
    """A base branch with an LVE judged by a model; a pull request adds an instance whose response is a
    refusal and whose judgement (answers, verdict, the rubric's hash copied) says the judge found it unsafe."""
    from lvegit.checkers.llm_judge import LLMJudgeChecker

    rubric_sha256 = LLMJudgeChecker("openai/judge-model", JUDGE_RUBRIC).rubric_sha256
    git = GitRepo(tmp_path / "workspace")
    lves = RepoBuilder(git.root)
    lves.lve("security/locks", JUDGED_TEST)
    base = git.commit("base")
    git.git("checkout", "-q", "-b", "pr")
    line = {
        **instance("I cannot help with that.", False, task="pick a lock"),
        "judgement": {"judge": "openai/judge-model", "rubric_sha256": rubric_sha256, **forged},
    }
    lves.lve("security/locks", JUDGED_TEST, instances={"instances.jsonl": [line]})
    return git, base, git.commit("a forged judgement")


def test_a_forged_judgement_is_a_claim_the_live_stage_asks_the_judge_about(
    action: Any, openai_server: Running, tmp_path: Path
) -> None:
    forged = {"answers": ["unsafe"], "verdicts": [False], "categories": [], "verdict": False}
    git, base, head = forged_judgement_pull(tmp_path, forged)
    openai_server.state.answer = model_and_judge()  # the judge calls only an explanation with a pin unsafe
    live = action(
        "pull_request",
        pull_request_payload(3, base, head),
        git.root,
        keep_env="OPENAI_API_KEY OPENAI_BASE_URL",
        results_dir="live",
    )
    assert live.code == 1
    data = json.loads((git.root / "live/results.json").read_text())
    [lve] = data["lves"]
    [judged] = lve["replayed"]
    assert (judged["status"], judged["replayed"]) == ("mismatch", True)
    assert "judge-model said 'safe'" in judged["reason"]
    assert any("were asked again" in note for note in data["trust"])

    offline = action("pull_request", pull_request_payload(3, base, head), git.root, live="false")
    assert offline.code == 0  # offline, the claim is all there is: it replays, and the comment says so
    data = json.loads((git.root / "lvegit-results/results.json").read_text())
    assert any("are the contributor's" in note for note in data["trust"])
    replayed = data["lves"][0]["replayed"]
    assert replayed and {(r["status"], r["reason"]) for r in replayed} == {("reproduced", CLAIMED)}
    summary = (tmp_path / "summary.md").read_text()
    assert "claimed, not re\\-asked" in summary and "✅ reproduced" not in summary


def test_a_judgement_with_no_answers_is_an_error_not_a_reproduction(action: Any, tmp_path: Path) -> None:
    forged = {"answers": [], "verdicts": [], "categories": [], "verdict": False}
    git, base, head = forged_judgement_pull(tmp_path, forged)
    result = action("pull_request", pull_request_payload(3, base, head), git.root, live="false")
    assert result.code == 1
    [lve] = json.loads((git.root / "lvegit-results/results.json").read_text())["lves"]
    [judged] = lve["replayed"]
    assert judged["status"] == "error" and "an impossible judgement" in judged["reason"]


def test_a_pull_request_that_changes_the_ids_fails_its_check(action: Any, tmp_path: Path) -> None:
    """Ids are given after merge by the id workflow: a pull request that writes lve-ids.json (an id of its
    choosing, or another LVE's) fails whatever the fail-on policy, and says why; the ids the check shows
    are the base commit's."""
    git = GitRepo(tmp_path / "workspace")
    lves = RepoBuilder(git.root)
    lves.lve("cat/a", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})

    def registry(ids: dict[str, str]) -> None:
        entries = {lve_id: {"path": path, "since": "2026-11-26"} for lve_id, path in ids.items()}
        (git.root / "lve-ids.json").write_text(
            json.dumps({"schema": "lvegit-ids", "version": 1, "ids": entries})
        )

    a, b = "repository/cat/a/openai--gpt-4o-mini", "repository/cat/b/openai--gpt-4o-mini"
    registry({"LVE-2026-0001": a})
    base = git.commit("base")
    git.git("checkout", "-q", "-b", "pr")
    lves.lve("cat/a", instances={"i.jsonl": [instance("3", True, a=1, b=2), instance("3", True, a=2, b=1)]})
    lves.lve("cat/b", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    registry({"LVE-2026-0001": b, "LVE-2026-0002": a})  # the new LVE takes the old one's id
    head = git.commit("claim an id")
    result = action(
        "pull_request", pull_request_payload(6, base, head), git.root, live="false", fail_on="none"
    )
    assert result.code == 1
    data = json.loads((git.root / "lvegit-results/results.json").read_text())
    assert data["passed"] is False
    assert data["failures"] == [
        "this pull request changes lve-ids.json: ids are given after merge by the id workflow"
    ]
    assert {lve["path"]: lve["id"] for lve in data["lves"]} == {a: "LVE-2026-0001", b: None}
    summary = (tmp_path / "summary.md").read_text()
    assert "| `LVE-2026-0001` [repository/cat/a/" in summary and "LVE-2026-0002" not in summary


def test_the_check_judges_an_lve_on_one_budget(
    tmp_path: Path, openai_server: Running, action: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check judges a changed LVE twice, each time through a checker worker of its own: its recorded
    instance (replay), then the live re-run's answer. Both take from the LVE's one budget: the replay's
    two seconds leave too little for the live verdict's two (with a budget per worker, both were judged)."""
    monkeypatch.setenv("LVEGIT_CHECKER_LVE_BUDGET", "3")
    git = GitRepo(tmp_path / "workspace")
    base = git.commit("base")
    slow = "import time\nfrom lvegit.checkers import BaseChecker\nclass Slow(BaseChecker):\n"
    slow += "    def is_safe(self, prompt, response, param_values=None):\n        time.sleep(2)\n        return True\n"
    RepoBuilder(git.root).lve(
        "cat/slow",
        {"checker_args": {"checker_name": "Slow"}},
        files={"checker/checker.py": slow},
        instances={"i.jsonl": [instance("3", True, a=1, b=2)]},
    )
    head = git.commit("slow checker")
    openai_server.state.answer = lambda body: "3"
    pushed = {"before": base, "after": head, "ref": "refs/heads/main"}
    result = action("push", pushed, git.root, keep_env="OPENAI_API_KEY OPENAI_BASE_URL", fail_on="none")
    assert result.code == 0, result.out
    [lve] = json.loads((git.root / "lvegit-results/results.json").read_text())["lves"]
    assert [r["status"] for r in lve["replayed"]] == ["reproduced"]
    [live] = lve["live"]
    assert "used up its time budget (3 s for each LVE, LVEGIT_CHECKER_LVE_BUDGET)" in json.dumps(live)


FILLER = (
    "import os\nfrom lvegit.checkers import BaseChecker\n"
    "class Filler(BaseChecker):\n"
    "    def is_safe(self, prompt, response, param_values=None):\n"
    "        os.mkdir('closed', 0o300)  # its owner cannot list it\n"
    "        try:\n"
    "            with open('closed/filler', 'wb', buffering=0) as handle:\n"
    "                while True:\n"
    "                    handle.write(b'x' * 65536)\n"
    "        except OSError:\n"
    "            return True\n"
)


def test_a_checker_that_fills_the_disk_cannot_lose_the_results(
    small_disk: Path, action: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runner's disk holds the workspace and the temporary folder; a checker fills it: the results
    file is written all the same, and the disk is empty of the checker's files after."""
    from lvegit.checkers.launcher import close_launchers

    git = GitRepo(small_disk / "workspace")
    lves = RepoBuilder(git.root)
    lves.lve("cat/a", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    base = git.commit("base")
    git.git("checkout", "-q", "-b", "pr")
    lves.lve(
        "cat/filler",
        {"checker_args": {"checker_name": "Filler"}, "prompt": [{"content": "{a}{b}"}]},
        files={"checker/checker.py": FILLER},
        instances={"i.jsonl": [instance("3", True, a=1, b=2)]},
    )
    head = git.commit("pr")
    temporary = small_disk / "tmp"
    temporary.mkdir()
    close_launchers()  # the next launcher makes its scratch folder on the small disk
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    try:
        result = action("pull_request", pull_request_payload(7, base, head), git.root)
    finally:
        close_launchers()
    assert result.code in (0, 1), result.err
    data = json.loads((git.root / "lvegit-results/results.json").read_text())
    assert [lve["path"] for lve in data["lves"]] == ["repository/cat/filler/openai--gpt-4o-mini"]
    assert list(temporary.iterdir()) == []
    assert not list((git.root / "lvegit-results").glob(".*"))  # nothing set aside is left
