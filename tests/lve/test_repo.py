from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lvegit.base.errors import LVEError, RepositoryNotFound, UsageError
from lvegit.lve.repo import Repository, find_root, model_folder, repository_url

from builders import RepoBuilder


@pytest.mark.parametrize(
    ("model", "folder"),
    [
        ("openai/gpt-3.5-turbo", "openai--gpt-35-turbo"),
        ("meta/llama-2-7b-chat", "meta--llama-2-7b-chat"),
        ("mistralai/Mistral-7B-Instruct-v0.2", "mistralai--Mistral-7B-Instruct-v02"),
        ("gpt-3.5-turbo", "openai--gpt-35-turbo"),  # bare OpenAI ids of early LVEs
        ("llama-2", "llama-2"),
        ("a/b c:d_é", "a--bcd"),
    ],
)
def test_model_folder(model: str, folder: str) -> None:
    assert model_folder(model) == folder


def test_find_root_walks_up(repo: RepoBuilder) -> None:
    lve_dir = repo.lve()
    assert find_root(lve_dir) == repo.root.resolve()


def test_find_root_accepts_repository_folder_without_lverepo(tmp_path: Path) -> None:
    (tmp_path / "repository").mkdir()
    assert find_root(tmp_path / "repository") == tmp_path.resolve()


def test_find_root_fails_clearly(tmp_path: Path) -> None:
    with pytest.raises(RepositoryNotFound, match="no LVE repository found"):
        find_root(tmp_path)


def test_lves_found_at_any_depth_and_sorted(repo: RepoBuilder) -> None:
    deep = repo.lve("cat/sub/subsub/name")
    shallow = repo.lve("cat/name")
    repo.lve("cat/name2", files={"instances/test.json": "{}"})  # test.json inside instances/ is no LVE
    other = repo.root / "repository/cat/name2/openai--gpt-4o-mini"
    found = Repository(repo.root.resolve()).lve_dirs()
    assert found == sorted(p.resolve() for p in (deep, shallow, other))


def test_category_and_name(repo: RepoBuilder) -> None:
    r = Repository(repo.root.resolve())
    assert r.category_and_name(repo.lve("privacy/pii/leak").resolve()) == ("privacy", "leak")
    assert r.category_and_name(repo.lve("privacy/leak").resolve()) == ("privacy", "leak")
    assert r.category_and_name(repo.lve("cat", folder="only").resolve()) == ("cat", "only")


def test_select_paths(repo: RepoBuilder, monkeypatch: pytest.MonkeyPatch) -> None:
    a = repo.lve("cat/a").resolve()
    b = repo.lve("cat/b").resolve()
    c = repo.lve("other/c").resolve()
    r = Repository(repo.root.resolve())
    assert r.select([], all_lves=True) == [a, b, c]
    assert r.select([repo.root / "repository/cat"], all_lves=False) == [a, b]
    assert r.select([a / "test.json", a], all_lves=False) == [a]
    assert r.select([Path("repository/other")], all_lves=False) == [c]  # relative to the root
    monkeypatch.chdir(b)
    assert r.select([], all_lves=False) == [b]
    monkeypatch.chdir(repo.root)
    assert r.select([], all_lves=False) == [a, b, c]  # outside repository/: every LVE
    with pytest.raises(UsageError, match="give paths or --all, not both"):
        r.select([a], all_lves=True)
    with pytest.raises(UsageError, match="no such file"):
        r.select([Path("nowhere")], all_lves=False)
    (repo.root / "repository/empty").mkdir()
    with pytest.raises(UsageError, match="holds no LVE"):
        r.select([repo.root / "repository/empty"], all_lves=False)


def test_skip_other_files_passes_over_paths_in_no_lve(repo: RepoBuilder, cli: Any) -> None:
    repo.lve("cat/a")
    (repo.root / "repository" / "README.md").write_text("about the repository\n")
    given = ["repository/README.md", "gone.txt", "repository/cat/a/openai--gpt-4o-mini/test.json"]
    refused = cli("validate", *given, cwd=repo.root)
    assert refused.code == 2 and "repository/README.md: not inside an LVE" in refused.err
    result = cli("validate", "--skip-other-files", *given, cwd=repo.root)
    assert (result.code, result.out.splitlines()[-1]) == (0, "1 LVE: 1 valid, 0 invalid")
    nothing = cli("validate", "--skip-other-files", "repository/README.md", cwd=repo.root)
    assert (nothing.code, nothing.out) == (0, "0 LVEs: 0 valid, 0 invalid\n")


def test_a_path_of_another_repository_is_refused_or_read_from_the_root(
    repo: RepoBuilder, cli: Any, tmp_path: Path
) -> None:
    """`--repo` names one repository while the current directory is another: a path that exists here but
    not under --repo is refused by name (it was an unexpected error); one that also exists under --repo
    (as lvegit prints paths: relative to the root) is read there."""
    repo.lve("cat/a")
    other = RepoBuilder(tmp_path / "other")
    other.lve("cat/a")
    other.lve("cat/only-here")
    here = cli("list", "repository/cat/a", "--repo", str(repo.root), cwd=other.root)
    assert here.code == 0 and "repository/cat/a/openai--gpt-4o-mini" in here.out
    refused = cli("list", "repository/cat/only-here", "--repo", str(repo.root), cwd=other.root)
    assert refused.code == 2 and f"not in the repository {repo.root}" in refused.err
    absolute = cli("list", str(other.root / "repository/cat/a"), "--repo", str(repo.root), cwd=other.root)
    assert absolute.code == 2 and "not in the repository" in absolute.err
    skipped = cli("validate", "--skip-other-files", str(other.root / "repository"), "--repo", str(repo.root))
    assert skipped.code == 0 and skipped.out == "0 LVEs: 0 valid, 0 invalid\n"


def test_lves_found_one_by_one_come_in_sorted_order(repo: RepoBuilder) -> None:
    """A run streams the LVEs as the folders are walked: the walk's order must be the sorted order, which
    compares paths part by part ('a/x' before 'a-b', although '-' sorts before '/')."""
    for name in ("a-b/x", "a/x", "a b/x", "A/x", "a.b/x", "a/x/deeper", "b/a/x", "b/a-b/x", "a0/x"):
        repo.lve(name)
    repository = Repository(repo.root)
    walked = list(repository.iter_lve_dirs())
    assert walked == repository.lve_dirs()
    assert len(walked) == 9


@pytest.mark.parametrize(
    ("written", "read"),
    [
        ("https://github.com/org/lves.git\n", "https://github.com/org/lves.git"),
        (
            "github.com/lve-org/lve\n",
            "https://github.com/lve-org/lve",
        ),  # as the public LVE repository writes it
        ("\n", None),
    ],
)
def test_the_repository_address_is_an_https_url(tmp_path: Path, written: str, read: str | None) -> None:
    RepoBuilder(tmp_path)
    (tmp_path / ".lverepo").write_text(written)
    assert repository_url(Repository(tmp_path)) == read


@pytest.mark.parametrize(
    "written",
    [
        "javascript:alert(document.domain)//github.com/x",
        "http://github.com/org/lves",
        "file:///etc/passwd",
        "data:text/html,<script>alert(1)</script>",
        "git@github.com:org/lves.git",
        'https://github.com/org/lves"><script>',
    ],
)
def test_any_other_repository_address_is_an_error_naming_the_file(tmp_path: Path, written: str) -> None:
    RepoBuilder(tmp_path)
    (tmp_path / ".lverepo").write_text(written + "\n")
    with pytest.raises(LVEError, match=r"^\.lverepo: the repository's address must be an https:// URL"):
        repository_url(Repository(tmp_path))
