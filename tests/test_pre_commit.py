"""The pre-commit hooks of .pre-commit-hooks.yaml, run by the real `pre-commit` in a real commit: an LVE
repository whose .pre-commit-config.yaml names this project (a git copy of its working tree) as a hook
repository. pre-commit installs lvegit into an environment of its own, as it would for a user."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from builders import PROJECT_ROOT, GitRepo, RepoBuilder, instance

BAD = "repository/cat/bad/openai--gpt-4o-mini"


def project_as_hook_repository(target: Path) -> str:
    """This working tree (uncommitted changes included) as a git repository; its commit."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for name in filter(None, listed.split("\0")):
        source = PROJECT_ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return GitRepo(target).commit("lvegit as a hook repository")


@pytest.mark.skipif(not (PROJECT_ROOT / ".git").exists(), reason="the project is not a git checkout here")
def test_commits_with_a_broken_lve_or_a_stale_readme_are_refused(tmp_path: Path) -> None:
    rev = project_as_hook_repository(tmp_path / "lvegit")
    lves = GitRepo(tmp_path / "lves")
    builder = RepoBuilder(lves.root)
    builder.lve("cat/good", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    (lves.root / "NOTES.md").write_text("not an LVE: the hook passes over it\n")
    hooks = [{"id": "lvegit-validate"}, {"id": "lvegit-readme"}]
    config = {"repos": [{"repo": str(tmp_path / "lvegit"), "rev": rev, "hooks": hooks}]}
    (lves.root / ".pre-commit-config.yaml").write_text(json.dumps(config))  # YAML is a superset of JSON
    environment = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}
    for name in ("GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE"):
        environment.pop(name, None)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            args, cwd=lves.root, env=environment, capture_output=True, text=True, check=False
        )

    assert run(sys.executable, "-m", "pre_commit", "install").returncode == 0
    assert run(sys.executable, "-m", "lvegit", "readme", "--all").returncode == 0
    first = run("git", "add", "-A")
    assert first.returncode == 0
    good = run("git", "commit", "-q", "-m", "a good LVE")
    assert good.returncode == 0, good.stdout + good.stderr
    builder.lve("cat/bad", {"tags": [{"name": "severity", "value": "extreme"}]})
    run("git", "add", "-A")
    refused = run("git", "commit", "-q", "-m", "a broken LVE")
    said = refused.stdout + refused.stderr  # git shows a hook's output on stderr
    assert refused.returncode != 0
    assert f"error: {BAD}/test.json:18: tags[0].value: severity must be one of low, medium, high" in said
    assert "repository/cat/good" not in said  # only the LVEs the staged files belong to
    builder.lve("cat/bad")
    run("git", "add", "-A")
    stale = run("git", "commit", "-q", "-m", "the LVE fixed, its README not written")
    assert stale.returncode != 0
    assert f"{BAD}/README.md: out of date" in stale.stdout + stale.stderr
    assert run(sys.executable, "-m", "lvegit", "readme", BAD).returncode == 0
    run("git", "add", "-A")
    fixed = run("git", "commit", "-q", "-m", "the LVE fixed")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
