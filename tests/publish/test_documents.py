"""`list`, `changed` and `models --format json` print versioned documents whose JSON Schemas ship."""

from __future__ import annotations

import json
from typing import Any

import jsonschema

from lvegit.base.records import schema_file
from lvegit.publish import documents

from builders import GitRepo, RepoBuilder, instance


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
        document = ran.json()
        jsonschema.Draft202012Validator(
            json.loads(schema_file(kind, documents.VERSION).read_text())
        ).validate(document)
        assert (document["schema"], document["version"]) == (f"lvegit-{kind}", 1), kind
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
