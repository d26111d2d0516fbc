from __future__ import annotations

from builders import RepoBuilder, instance


def test_valid_repository_text_output(repo: RepoBuilder, cli) -> None:
    repo.lve("cat/a", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    repo.lve("cat/b")
    result = cli("validate", "--all", "--repo", str(repo.root))
    assert (result.code, result.err) == (0, "")
    assert result.out == (
        "repository/cat/a/openai--gpt-4o-mini: ok\n"
        "repository/cat/b/openai--gpt-4o-mini: ok\n"
        "2 LVEs: 2 valid, 0 invalid\n"
    )


def test_invalid_lve_exit_1_with_located_errors(repo: RepoBuilder, cli) -> None:
    repo.lve("cat/a", {"tags": [{"name": "severity", "value": "extreme"}], "extra": 1})
    result = cli("validate", "repository/cat", cwd=repo.root)
    assert result.code == 1
    assert result.out == (
        "repository/cat/a/openai--gpt-4o-mini: invalid (1 error)\n"
        "  error: repository/cat/a/openai--gpt-4o-mini/test.json:18: tags[0].value: severity must be one of low, "
        "medium, high, not 'extreme'\n"
        "  warning: repository/cat/a/openai--gpt-4o-mini/test.json:25: extra: unknown key 'extra'\n"
        "1 LVE: 0 valid, 1 invalid\n"
    )


def test_strict_turns_warnings_into_errors(repo: RepoBuilder, cli) -> None:
    repo.lve("cat/a", {"extra": 1})
    assert cli("validate", "--all", cwd=repo.root).code == 0
    strict = cli("validate", "--all", "--strict", "--format", "json", cwd=repo.root)
    assert strict.code == 1
    assert strict.json()["lves"][0]["errors"][0]["message"] == "unknown key 'extra'"


def test_json_output(repo: RepoBuilder, cli) -> None:
    repo.lve("cat/a")
    repo.lve("cat/b", {"model": "other/model"})
    result = cli("validate", "--all", "--format", "json", "--repo", str(repo.root))
    assert result.code == 1
    assert result.json() == {
        "schema": "lvegit-validate",
        "version": 1,
        "lves": [
            {"path": "repository/cat/a/openai--gpt-4o-mini", "valid": True, "errors": [], "warnings": []},
            {
                "path": "repository/cat/b/openai--gpt-4o-mini",
                "valid": False,
                "errors": [
                    {
                        "severity": "error",
                        "file": "repository/cat/b/openai--gpt-4o-mini/test.json",
                        "field": "model",
                        "message": "the LVE folder 'openai--gpt-4o-mini' does not match the model: expected 'other--model'",
                        "line": 3,
                    }
                ],
                "warnings": [],
            },
        ],
        "summary": {"valid": 1, "invalid": 1},
    }


def test_inside_an_lve_validates_that_lve(repo: RepoBuilder, cli) -> None:
    lve_dir = repo.lve("cat/a")
    repo.lve("cat/b", {"model": None})
    result = cli("validate", cwd=lve_dir)
    assert (result.code, result.out.splitlines()[-1]) == (0, "1 LVE: 1 valid, 0 invalid")


def test_without_paths_one_rule_selects(repo: RepoBuilder, cli) -> None:
    """Below the current directory inside repository/; anywhere else, every LVE."""
    repo.lve("cat/a")
    repo.lve("other/b")
    at_root = cli("validate", cwd=repo.root)
    assert (at_root.code, at_root.out.splitlines()[-1]) == (0, "2 LVEs: 2 valid, 0 invalid")
    in_category = cli("validate", cwd=repo.root / "repository/cat")
    assert in_category.out.splitlines()[-1] == "1 LVE: 1 valid, 0 invalid"
    assert cli("list", cwd=repo.root / "repository/other").out.splitlines()[-1] == "1 LVE, 0 instances"


def test_usage_errors_exit_2(repo: RepoBuilder, cli, tmp_path) -> None:
    repo.lve("cat/a")
    for command in ("validate", "list", "replay"):
        both = cli(command, "--all", "extra", cwd=repo.root)
        assert (both.code, both.err) == (
            2,
            "lvegit: error: --all selects every LVE: give paths or --all, not both\n",
        )
    missing = cli("validate", "nope", cwd=repo.root)
    assert (missing.code, missing.err) == (2, "lvegit: error: nope: no such file or directory\n")
    no_repo = cli("validate", "--all", cwd=tmp_path)
    assert no_repo.code == 2 and "no LVE repository found" in no_repo.err
    bad_format = cli("validate", "--all", "--format", "xml", cwd=repo.root)
    assert bad_format.code == 2 and "Invalid value for '--format'" in bad_format.err
