"""`list`, `changed` and `models --format json` print versioned documents whose JSON Schemas ship."""

from __future__ import annotations

from typing import Any

from builders import GitRepo, RepoBuilder, instance, shipped_schema_accepts


def test_each_command_prints_a_document_its_schema_accepts(tmp_path: Any, cli: Any) -> None:
    git = GitRepo(tmp_path / "lves")
    lves = RepoBuilder(git.root)
    lves.lve("cat/fine", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    lves.lve("cat/moved")
    git.commit("base")
    git.git("checkout", "-q", "-b", "pr")
    git.git("mv", "repository/cat/moved", "repository/cat/renamed")
    lves.lve(
        "cat/toxic", test={"checker_args": {"checker_name": "ToxicityChecker", "model": "org/tiny-toxic"}}
    )
    (git.root / "repository/cat/broken/openai--gpt-4o-mini").mkdir(parents=True)
    (git.root / "repository/cat/broken/openai--gpt-4o-mini/test.json").write_text("{")
    git.commit("pr")
    for kind, arguments in (("list", ["--all"]), ("changed", ["--base", "main"]), ("models", ["--all"])):
        ran = cli(kind, *arguments, "--format", "json", cwd=git.root)
        shipped_schema_accepts(ran.json(), kind)
    assert [
        row["loads"] for row in cli("list", "--all", "--format", "json", cwd=git.root).json()["lves"]
    ] == [
        False,
        True,
        True,
        True,
    ]
    changed = cli("changed", "--base", "main", "--format", "json", cwd=git.root).json()
    assert "repository/cat/toxic/openai--gpt-4o-mini" in changed["changed"]
    assert changed["renamed"] == [
        {
            "from": "repository/cat/moved/openai--gpt-4o-mini",
            "to": "repository/cat/renamed/openai--gpt-4o-mini",
        }
    ]
    models = cli("models", "--all", "--format", "json", cwd=git.root).json()["models"]
    assert models == [
        {"model": "org/tiny-toxic", "cached": False, "lves": ["repository/cat/toxic/openai--gpt-4o-mini"]}
    ]
