"""What the comment stage derives from GitHub's word alone: the LVEs a pull request changes and removes,
from its files list and its head's tree, as lvegit.git.changes finds them with git."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from lvegit.git import changes
from lvegit.github.verify import (
    ChangedFile,
    action_folders,
    changed_lves,
    lve_folders,
    runs_on_doubts,
    workflow_file,
)
from lvegit.lve.repo import Repository

from builders import GitRepo, RepoBuilder, instance

GIT_STATUS = {"A": "added", "D": "removed", "M": "modified", "R": "renamed", "T": "changed"}


def as_github_lists(git: GitRepo, base: str, head: str) -> tuple[list[ChangedFile], set[str]]:
    """The pull request's files (GitHub's files list) and its head's LVE folders."""
    files = []
    for entry in git.git("diff", "--name-status", "-M", f"{base}...{head}").splitlines():
        status, *paths = entry.split("\t")
        previous = paths[0] if len(paths) > 1 else None
        files.append(ChangedFile(paths[-1], GIT_STATUS[status[0]], previous))
    tree = git.git("ls-tree", "-r", "--name-only", head).splitlines()
    return files, lve_folders(tree)


@pytest.mark.parametrize("top", ["", "lves"])
def test_the_changed_lves_derived_from_githubs_lists_are_gits(tmp_path: Path, top: str) -> None:
    """An edited, an added, a renamed and a removed LVE, an instance file removed from a kept LVE, a file
    beside the LVEs: the same LVEs as lvegit's own diff, with the LVE root at the top or in a folder."""
    git = GitRepo(tmp_path / "workspace")
    root = git.root / top if top else git.root
    lves = RepoBuilder(root)

    def distinct(number: int) -> dict[str, list[dict[str, object]]]:  # no file git takes for another's
        return {
            f"{name}.jsonl": [instance(str(number + 10 * k), True, a=number, b=10 * k)]
            for k, name in enumerate("ij")
        }

    for number, name in enumerate(("edited", "moved", "gone", "thinned")):
        lves.lve(f"cat/{name}", {"description": f"the {name} one, {number}"}, instances=distinct(number))
    base = git.commit("base")
    git.git("checkout", "-q", "-b", "pr")
    lves.lve(
        "cat/edited",
        {"description": "the edited one, 0"},
        instances={"i.jsonl": [instance("5", True, a=2, b=3)]},
    )
    lves.lve("cat/new", raw_test='{"unlike": "any other test.json"}', instances=distinct(7))
    shutil.move(root / "repository/cat/moved", root / "repository/cat/renamed")
    shutil.rmtree(root / "repository/cat/gone")
    (root / "repository/cat/thinned/openai--gpt-4o-mini/instances/j.jsonl").unlink()
    (root / "repository/cat/README.md").write_text("a category\n")
    withheld = (
        root / "repository/cat/withheld/openai--gpt-4o-mini"
    )  # a withheld LVE: its abstract, no test.json
    withheld.mkdir(parents=True)
    (withheld / "withheld.json").write_text("{}\n")
    (withheld / "payload.age").write_text("age\n")
    head = git.commit("pr")

    found = changes.changed_lves(Repository(root), base, head)
    files, folders = as_github_lists(git, base, head)
    derived, removed = changed_lves(files, folders, top)
    assert set(derived) == set(found.changed) and removed == set(found.removed)
    assert {lve: old for lve, (status, old) in derived.items() if status == "renamed"} == found.renamed
    added = {lve for lve, (status, _old) in derived.items() if status == "added"}
    assert added == {"repository/cat/new/openai--gpt-4o-mini", "repository/cat/withheld/openai--gpt-4o-mini"}
    assert len(found.changed) == 5 and len(found.removed) == 1


def test_a_runs_workflow_file_is_named_as_a_path_of_the_repository() -> None:
    assert (
        workflow_file(".github/workflows/lvegit-check.yml", "org/lves")
        == ".github/workflows/lvegit-check.yml"
    )
    assert (
        workflow_file("org/lves/.github/workflows/x.yml@refs/pull/9/merge", "org/lves")
        == ".github/workflows/x.yml"
    )
    assert (
        workflow_file("evil/lves/.github/workflows/x.yml@main", "org/lves")
        == "evil/lves/.github/workflows/x.yml"
    )


def test_what_a_check_runs_on_is_any_workflow_action_or_lvegit_configuration() -> None:
    names = [
        ".github/workflows/other.yml",
        ".github/actions/setup/run.sh",
        "tools/action.yaml",
        "docker/Dockerfile",
        "lves/lvegit.toml",
        "lves/pyproject.toml",
    ]
    for name in names:
        [doubt] = runs_on_doubts([ChangedFile(name, "modified")], "lves", set())
        assert f"({name})" in doubt
    renamed_away = ChangedFile("old.yml", "renamed", ".github/workflows/lvegit-check.yml")
    assert runs_on_doubts([renamed_away], "", set()) != []
    unrelated = ["lves/repository/cat/x/test.json", "README.md", "pyproject.toml", ".github/CODEOWNERS"]
    assert runs_on_doubts([ChangedFile(name, "modified") for name in unrelated], "lves", set()) == []


def test_a_local_actions_folder_and_names_in_any_case_are_what_a_check_runs_on() -> None:
    """Any file below a folder holding an action.yml (a composite action's script) counts, and every name
    is compared case-folded: a macOS or Windows runner reads `.GitHub/Actions/x/Action.YML` as the
    action it runs."""
    actions = action_folders(["tools/setup/Action.YAML", "tools/setup/run.sh", "README.md"])
    assert actions == {"tools/setup"}
    for name in ["tools/setup/run.sh", "Tools/Setup/lib/x.py", ".GitHub/Workflows/x.yml", "x/DOCKERFILE"]:
        [doubt] = runs_on_doubts([ChangedFile(name, "modified")], "lves", actions)
        assert f"({name})" in doubt
    assert runs_on_doubts([ChangedFile("LVES/LVEGIT.TOML", "added")], "lves", actions) != []
    assert runs_on_doubts([ChangedFile("tools/other/run.sh", "modified")], "lves", actions) == []
    # an action at the top of the repository runs everything in it
    assert runs_on_doubts([ChangedFile("README.md", "modified")], "", action_folders(["action.yml"])) != []
