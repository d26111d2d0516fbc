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
            "id": None,  # no lve-ids.json here
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
    three = {"i.jsonl": [instance("3", True, a=1, b=2)] * 3}
    repo.lve("cat/broken", raw_test="{", instances=three)
    repo.lve("cat/typed", {"model": 5, "checker_args": "x"}, instances=three)
    rows = cli("list", "--format", "json", cwd=repo.root).json()["lves"]
    assert [(r["loads"], r["model"], r["checker"], r["instances"]) for r in rows] == [
        (False, None, None, 3),
        (False, None, None, 3),
    ]
    table = cli("list", cwd=repo.root).out.splitlines()
    assert table[1].split() == [
        "repository/cat/broken/openai--gpt-4o-mini",
        "cat",
        "(invalid)",
        "(invalid)",
        "3",
    ]
    assert "None" not in "\n".join(table) and table[-1] == "2 LVEs, 6 instances"
