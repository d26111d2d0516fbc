from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from lvegit.base.errors import UsageError
from lvegit.git.changes import changed_lves
from lvegit.lve.repo import Repository
from lvegit.publish.documents import changed_document

from builders import GitRepo, RepoBuilder, instance

A = "repository/cat/a/openai--gpt-4o-mini"
B = "repository/cat/b/openai--gpt-4o-mini"
C = "repository/other/sub/c/openai--gpt-4o-mini"


@pytest.fixture
def history(tmp_path: Path) -> tuple[GitRepo, RepoBuilder]:
    git = GitRepo(tmp_path / "lves")
    lves = RepoBuilder(git.root)
    for name in ("cat/a", "cat/b", "other/sub/c"):
        lves.lve(name, instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    (git.root / "README.md").write_text("lves\n")
    (git.root / "repository/cat/README.md").write_text("category\n")
    git.commit("base")
    git.git("checkout", "-q", "-b", "pr")
    return git, lves


def changes(git: GitRepo, base: str = "main", head: str = "HEAD") -> dict[str, object]:
    return changed_document(changed_lves(Repository(git.root.resolve()), base, head))


def summary(
    git: GitRepo, base: str = "main", head: str = "HEAD"
) -> tuple[list[str], list[str], list[dict[str, str]]]:
    data = changes(git, base, head)
    return data["changed"], data["removed"], data["renamed"]  # type: ignore[return-value]


@pytest.mark.parametrize(
    "edit",
    [
        "test.json",
        "instances/i.jsonl",
        "instances/new.jsonl",
        "test.prompt",
        "checker/checker.py",
        "README.md",
    ],
)
def test_any_file_inside_an_lve_counts(history: tuple[GitRepo, RepoBuilder], edit: str) -> None:
    git, _ = history
    path = git.root / A / edit
    path.parent.mkdir(exist_ok=True)
    with path.open("a") as handle:
        handle.write("\n")
    git.commit("edit")
    assert summary(git) == ([A], [], [])


def test_files_outside_lves_are_ignored(history: tuple[GitRepo, RepoBuilder]) -> None:
    git, _ = history
    (git.root / "README.md").write_text("changed\n")
    (git.root / "repository/cat/README.md").write_text("changed\n")
    (git.root / "repository/cat/notes.txt").write_text("new\n")
    git.commit("outside")
    assert summary(git) == ([], [], [])


def test_renamed_lve_is_reported_under_its_new_path(history: tuple[GitRepo, RepoBuilder]) -> None:
    git, _ = history
    git.git("mv", "repository/cat/a", "repository/cat/renamed")
    git.commit("rename")
    new = "repository/cat/renamed/openai--gpt-4o-mini"
    assert summary(git) == ([new], [], [{"from": A, "to": new}])


def test_deleted_lve_is_reported_separately(history: tuple[GitRepo, RepoBuilder]) -> None:
    git, _ = history
    shutil.rmtree(git.root / "repository/other")
    (git.root / B / "instances/i.jsonl").write_text("")
    git.commit("delete c, empty b's instances")
    assert summary(git) == ([B], [C], [])


def test_new_lve_is_changed(history: tuple[GitRepo, RepoBuilder]) -> None:
    git, lves = history
    lves.lve("fresh/d")
    git.commit("add")
    assert summary(git) == (["repository/fresh/d/openai--gpt-4o-mini"], [], [])


def test_base_moving_on_does_not_count_three_dot(history: tuple[GitRepo, RepoBuilder]) -> None:
    git, _ = history
    (git.root / A / "README.md").write_text("pr\n")
    git.commit("pr edits a")
    git.git("checkout", "-q", "main")
    (git.root / B / "README.md").write_text("main\n")
    git.commit("main edits b")
    git.git("checkout", "-q", "pr")
    assert summary(git) == ([A], [], [])
    git.git("merge", "-q", "--no-edit", "main")  # the PR merges main in: b's change is main's, not the PR's
    assert summary(git) == ([A], [], [])


def test_unrelated_histories_fall_back_to_two_dot(history: tuple[GitRepo, RepoBuilder]) -> None:
    git, _ = history
    git.git("checkout", "-q", "--orphan", "other")
    git.git("rm", "-rq", "--cached", ".")
    (git.root / A / "README.md").write_text("orphan\n")
    git.commit("orphan root")
    data = changes(git, base="main")
    assert data["changed"] == [A] and data["base"] == git.git("rev-parse", "main")


def test_lve_root_inside_a_larger_git_work_tree(tmp_path: Path) -> None:
    git = GitRepo(tmp_path / "project")
    lves = RepoBuilder(git.root / "data" / "lves")
    lves.lve("cat/a")
    git.commit("base")
    (lves.root / A / "README.md").write_text("x\n")
    (git.root / "src.py").write_text("print()\n")
    git.commit("edit")
    assert changed_lves(Repository(lves.root.resolve()), "HEAD~1").changed == [A]


def test_bad_revisions_and_no_git(history: tuple[GitRepo, RepoBuilder], tmp_path: Path) -> None:
    git, _ = history
    with pytest.raises(UsageError, match="unknown git revision 'nope'"):
        changed_lves(Repository(git.root.resolve()), "nope")
    plain = RepoBuilder(tmp_path / "plain")
    with pytest.raises(UsageError, match="is not inside a git repository"):
        changed_lves(Repository(plain.root.resolve()), "main")


def test_changed_command_and_selection(history: tuple[GitRepo, RepoBuilder], cli) -> None:
    git, _ = history
    (git.root / A / "instances/i.jsonl").write_text('{"response": "3"}\n')  # missing args a and b
    git.git("mv", "repository/cat/b", "repository/cat/bee")
    shutil.rmtree(git.root / "repository/other")
    git.commit("pr")
    bee = "repository/cat/bee/openai--gpt-4o-mini"
    result = cli("changed", "--base", "main", cwd=git.root)
    assert result.code == 0
    assert result.out.splitlines()[:3] == [A, f"{bee}  (renamed from {B})", f"{C}  (removed)"]
    assert result.out.splitlines()[3].startswith("2 changed, 1 removed between ")
    validated = cli("validate", "--changed", "--base", "main", "--format", "json", cwd=git.root).json()
    assert [lve["path"] for lve in validated["lves"]] == [A, bee]
    assert validated["summary"] == {"valid": 1, "invalid": 1}
    replayed = cli("replay", "--changed", "--base", "main", "--head", "pr", "--format", "json", cwd=git.root)
    assert {i["lve"] for i in replayed.json()["instances"]} == {A, bee}
    assert (
        "give no paths and no --all"
        in cli("replay", "--changed", "--all", "--base", "main", cwd=git.root).err
    )
    assert "add --changed" in cli("validate", "--base", "main", cwd=git.root).err


def test_without_base_the_work_tree_is_compared_with_the_default_branch(
    history: tuple[GitRepo, RepoBuilder], cli
) -> None:
    """A contributor's question: what have I changed? Commits, staged, unstaged and untracked files."""
    git, lves = history
    (git.root / A / "README.md").write_text("committed\n")
    git.commit("on the branch")
    (git.root / B / "instances/i.jsonl").write_text('{"response": "3"}\n')  # unstaged, and invalid
    lves.lve("cat/new")  # untracked
    git.git("rm", "-q", "-r", "repository/other")  # staged removal
    new = "repository/cat/new/openai--gpt-4o-mini"
    data = changed_document(changed_lves(Repository(git.root.resolve()), None, None))
    assert (data["changed"], data["removed"], data["base_ref"], data["head"]) == (
        [A, B, new],
        [C],
        "main",
        "work tree",
    )
    result = cli("changed", cwd=git.root)
    assert result.code == 0, result.err
    base = git.git("rev-parse", "main")[:12]
    assert result.out.splitlines() == [
        A,
        B,
        new,
        f"{C}  (removed)",
        f"3 changed, 1 removed between {base} (merge base with main, the local default branch) and the "
        "work tree (uncommitted and untracked files included)",
    ]
    validated = cli("validate", "--changed", "--format", "json", cwd=git.root)
    assert [lve["path"] for lve in validated.json()["lves"]] == [A, B, new]
    assert validated.err == (
        f"lvegit: 3 changed LVEs between {base} (merge base with main, the local default branch) and the "
        "work tree (uncommitted and untracked files included)\n"
    )
    # An explicit --head compares commits, as before.
    assert changed_lves(Repository(git.root.resolve()), None, "HEAD").changed == [A]


def test_default_base_prefers_the_upstream_then_origin_head(tmp_path: Path) -> None:
    origin = GitRepo(tmp_path / "origin")
    RepoBuilder(origin.root).lve("cat/a")
    origin.commit("base")
    origin.git("checkout", "-q", "-b", "release")
    (origin.root / A / "README.md").write_text("release\n")
    origin.commit("release")
    origin.git("checkout", "-q", "main")
    clone = tmp_path / "clone"
    GitRepo.clone(origin.root, clone)
    work = GitRepo.at(clone)
    work.git("checkout", "-q", "-b", "topic", "--track", "origin/release")
    (clone / A / "test.prompt").write_text("x")
    repo = Repository(clone.resolve())
    tracked = changed_lves(repo, None, None)
    assert (tracked.base_ref, tracked.base_reason) == ("origin/release", "the upstream of the current branch")
    assert tracked.changed == [A]
    work.git("checkout", "-q", "-b", "untracked-branch")
    untracked = changed_lves(repo, None, None)
    assert (untracked.base_ref, untracked.base_reason) == ("origin/main", "the default branch of origin")
    assert untracked.changed == [A]  # release's README is not on main: it counts as a change too


def test_without_any_default_branch_base_is_asked_for(tmp_path: Path) -> None:
    git = GitRepo(tmp_path / "lves")
    RepoBuilder(git.root).lve("cat/a")
    git.commit("base")
    git.git("branch", "-q", "-m", "main", "trunk")
    with pytest.raises(UsageError, match=r"no default branch to compare with .*: pass --base REF"):
        changed_lves(Repository(git.root.resolve()), None, None)


@pytest.mark.parametrize("folder", ["with\nnewline", "star*", "question?", "[bracket]", ":colon"])
def test_odd_folder_names_are_looked_up_literally(history: tuple[GitRepo, RepoBuilder], folder: str) -> None:
    git, lves = history
    lves.lve(f"odd/{folder}")
    lves.lve("odd/starry")  # a glob 'star*' would also match this one
    git.commit("odd names")
    assert summary(git)[0] == sorted(
        [f"repository/odd/{folder}/openai--gpt-4o-mini", "repository/odd/starry/openai--gpt-4o-mini"]
    )
