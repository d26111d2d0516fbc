"""docs/adopting.md, walked on an existing repository as lve-tools left it (no READMEs of lvegit's, no
.gitignore, no ids): each step changes what the page says and nothing else."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from builders import PROJECT_ROOT, GitRepo, RepoBuilder, instance

PAGE = (PROJECT_ROOT / "docs" / "adopting.md").read_text()


def test_the_page_is_in_the_site_and_in_order() -> None:
    assert "  - Adopting lvegit: adopting.md\n" in (PROJECT_ROOT / "mkdocs.yml").read_text()
    steps = [
        "## 1. Install and look",
        "## 2. Ids",
        "## 3. READMEs",
        "## 4. Routes and the cache",
        "## 5. The workflows",
    ]
    assert [PAGE.index(step) for step in steps] == sorted(PAGE.index(step) for step in steps)


def test_day_one_on_an_existing_repository(tmp_path: Path, cli: Any) -> None:
    git = GitRepo(tmp_path / "lves")
    lves = RepoBuilder(git.root)
    (git.root / ".lverepo").unlink()  # lve-tools' repositories have none
    for name in ("cat/a", "cat/b", "other/c"):
        lves.lve(name, instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    git.commit("an LVE repository of lve-tools")

    # 1. look: nothing in git changes, the cache included
    looked = cli("check", "--all", cwd=git.root)
    assert looked.code == 0 and looked.out.endswith("3 reproduced, 0 mismatches, 0 skipped, 0 errors\n")
    assert git.git("status", "--porcelain", "--untracked-files=all") == ""
    # 2. ids: lve-ids.json alone
    assert cli("ids", "assign", cwd=git.root).code == 0
    assert git.git("status", "--porcelain", "--untracked-files=all") == "?? lve-ids.json"
    assert len(json.loads((git.root / "lve-ids.json").read_text())["ids"]) == 3
    git.commit("ids")
    # 3. READMEs: out of date, then written, in a commit of their own
    assert cli("readme", "--check", "--all", cwd=git.root).code == 1
    assert cli("readme", "--all", cwd=git.root).code == 0
    changed = git.git("status", "--porcelain", "--untracked-files=all").splitlines()
    assert sorted(line.rsplit("/", 1)[-1] for line in changed) == ["README.md"] * 3
    git.commit("READMEs by lvegit")
    assert cli("readme", "--check", "--all", cwd=git.root).code == 0
    assert cli("check", "--all", cwd=git.root).code == 0
    assert git.git("status", "--porcelain", "--untracked-files=all") == ""
