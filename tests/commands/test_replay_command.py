from __future__ import annotations

from builders import RepoBuilder, instance


def test_text_output_lists_what_did_not_reproduce(repo: RepoBuilder, cli) -> None:
    repo.lve("cat/a", instances={"i.jsonl": [instance("3", True, a=1, b=2), instance("3", False, a=1, b=2)]})
    result = cli("replay", "--all", cwd=repo.root)
    assert result.code == 1
    assert result.out == (
        "repository/cat/a/openai--gpt-4o-mini: 1 reproduced, 1 mismatch\n"
        "  mismatch: repository/cat/a/openai--gpt-4o-mini/instances/i.jsonl:2: recorded passed=False, "
        "replayed passed=True\n"
        "1 LVE: 1 reproduced, 1 mismatch, 0 skipped, 0 errors\n"
    )


def test_each_lve_prints_in_its_turn_and_a_missing_model_is_skipped_at_once(repo: RepoBuilder, cli) -> None:
    toxic = {
        "checker_args": {"checker_name": "ToxicityChecker", "toxicity_threshold": 0.5, "model": "nobody/gone"}
    }
    repo.lve("a/toxic", toxic, instances={"i.jsonl": [instance("hi", True, a=1, b=2)] * 2})
    repo.lve("b/plain", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    repo.lve("c/empty")
    result = cli("replay", "--all", cwd=repo.root)
    # The classifier is not here: no model stack loads for it, so its LVE is judged in its turn.
    assert result.out.splitlines() == [
        "repository/a/toxic/openai--gpt-4o-mini: 2 skipped",
        "  skipped: 2 instances: model 'nobody/gone' is not in the local Hugging Face cache: download it with: "
        "lvegit models --download",
        "repository/b/plain/openai--gpt-4o-mini: 1 reproduced",
        "repository/c/empty/openai--gpt-4o-mini: no instances",
        "3 LVEs: 1 reproduced, 0 mismatches, 2 skipped, 0 errors",
    ]


def test_all_reproduced_or_skipped_exits_0(repo: RepoBuilder, cli) -> None:
    repo.lve("cat/a", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    repo.lve(
        "cat/pii",
        {"checker_args": {"checker_name": "PII_Checker", "entities": ["PERSON"]}},
        instances={"i.jsonl": [instance("<PERSON>", False, a=1, b=2)]},
    )
    result = cli("replay", "--all", "--format", "json", cwd=repo.root)
    assert result.code == 0
    data = result.json()
    assert data["summary"] == {"reproduced": 1, "mismatch": 0, "skipped": 1, "error": 0}
    assert [i["status"] for i in data["instances"]] == ["reproduced", "skipped"]
    assert set(data["instances"][0]) == {"lve", "file", "line", "recorded", "replayed", "status", "reason"}


def test_errors_exit_1(repo: RepoBuilder, cli) -> None:
    repo.lve("cat/a", instances={"i.jsonl": "not json\n"})
    result = cli("replay", "repository/cat/a", cwd=repo.root)
    assert result.code == 1
    assert result.out.splitlines()[1].startswith(
        "  error: repository/cat/a/openai--gpt-4o-mini/instances/i.jsonl:1: "
    )
