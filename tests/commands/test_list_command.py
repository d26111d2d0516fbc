from __future__ import annotations

from builders import RepoBuilder, instance


def test_list_table_and_json(repo: RepoBuilder, cli) -> None:
    repo.lve(
        "privacy/leak",
        instances={"a.jsonl": [instance("1", True, a=1, b=2)] * 2, "b.json": [instance("1", True, a=1, b=2)]},
    )
    repo.lve("dummy/sub/b", {"checker_args": {"checker_name": "RefuseChecker"}})
    result = cli("list", cwd=repo.root)
    assert result.code == 0
    assert result.out == (
        "path                                         category  model               checker        instances\n"
        "repository/dummy/sub/b/openai--gpt-4o-mini   dummy     openai/gpt-4o-mini  RefuseChecker  0\n"
        "repository/privacy/leak/openai--gpt-4o-mini  privacy   openai/gpt-4o-mini  LambdaChecker  3\n"
        "2 LVEs, 3 instances\n"
    )
    rows = cli("list", "repository/privacy", "--format", "json", cwd=repo.root).json()["lves"]
    assert rows == [
        {
            "path": "repository/privacy/leak/openai--gpt-4o-mini",
            "category": "privacy",
            "name": "leak",
            "model": "openai/gpt-4o-mini",
            "checker": "LambdaChecker",
            "prompt": "prompt",
            "instances": 3,
            "description": "adds two numbers wrongly",
            "loads": True,
        }
    ]


def test_list_shows_broken_lves_too(repo: RepoBuilder, cli) -> None:
    repo.lve("cat/broken", raw_test="{")
    rows = cli("list", "--format", "json", cwd=repo.root).json()["lves"]
    assert rows[0]["loads"] is False and rows[0]["model"] is None
