"""`lvegit export --format osv` (advisories from the run history) and `--format sarif` (code scanning from a
run report), each checked against its official JSON Schema (../shared/reference) and for what it says."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from builders import GitRepo, RepoBuilder, history_run, instance, reference_schema_accepts
from servers import Running

ROWS = {"i.jsonl": [instance("3", True, a=1, b=2)]}


def lve(name: str) -> str:
    return f"repository/cat/{name}/openai--gpt-4o-mini"


def test_osv_names_the_versions_that_introduced_fixed_and_regressed(cli: Any, tmp_path: Path) -> None:
    git = GitRepo(tmp_path / "lves")
    lves = RepoBuilder(git.root)
    for name in ("back", "came", "fixed", "never"):
        lves.lve(f"cat/{name}", {"tags": [{"name": "owasp-llm", "value": "2025:LLM01"}]}, instances=ROWS)
    assert cli("ids", "assign", "--today", "2026-11-26", cwd=git.root).code == 0
    lves.lve("cat/newer", instances=ROWS)  # landed after the ids were given: left out, said why
    folder = git.root / "history"
    model = "acme/chat"
    history_run(folder, "2026-09-01T03:00:00Z", {(lve("back"), model, "v1"): (5, 0), (lve("fixed"), model, "v1"): (5, 0),
                                                 (lve("came"), model, "v1"): (0, 80), (lve("never"), model, "v1"): (0, 80)})  # fmt: skip
    history_run(folder, "2026-09-08T03:00:00Z", {(lve("back"), model, "v2"): (0, 80), (lve("fixed"), model, "v2"): (0, 80),
                                                 (lve("came"), model, "v2"): (4, 0)})  # fmt: skip
    history_run(folder, "2026-09-15T03:00:00Z", {(lve("back"), model, "v3"): (3, 0)})

    out = tmp_path / "osv"
    exported = cli("export", "--format", "osv", "--output", str(out), cwd=git.root)
    assert exported.code == 0, exported.err
    assert f"{lve('newer')}: left out, no id yet" in exported.err
    index = json.loads((out / "index.json").read_text())
    assert [entry["id"] for entry in index] == [f"x_LVE-2026-000{n}" for n in range(1, 5)]
    records = {path.stem: json.loads(path.read_text()) for path in out.glob("x_*.json")}
    by_path = {record["database_specific"]["path"]: record for record in records.values()}

    def events(name: str) -> list[dict[str, str]]:
        [affected] = by_path[lve(name)]["affected"]
        assert affected["database_specific"]["model"] == model
        return list(affected["ranges"][0]["events"])

    assert events("back") == [{"introduced": "v1"}, {"fixed": "v2"}, {"introduced": "v3"}]
    assert events("fixed") == [{"introduced": "v1"}, {"fixed": "v2"}]
    assert events("came") == [{"introduced": "v2"}]  # v1 was never affected: its first introduction
    assert by_path[lve("never")]["affected"] == []
    back = by_path[lve("back")]
    assert back["id"] == "x_LVE-2026-0001" and back["database_specific"]["lve_id"] == "LVE-2026-0001"
    assert back["published"] == "2026-11-26T00:00:00Z"
    assert "/RG:Y/" in back["database_specific"]["severity"]["vector"]  # it regressed
    assert {"name": "owasp-llm", "value": "2025:LLM01"} in back["database_specific"]["tags"]
    assert back["references"][0] == {
        "type": "WEB",
        "url": f"https://example.invalid/lves/tree/main/{lve('back')}",
    }

    streamed = cli("export", "--format", "osv", cwd=git.root)
    assert [json.loads(text)["id"] for text in streamed.out.splitlines()] == [e["id"] for e in index]
    refused = cli("export", "--format", "osv", "report.jsonl", cwd=git.root)
    assert refused.code == 2
    for record in records.values():  # last: it skips where the official schema is not beside the checkout
        reference_schema_accepts(record, "osv-schema.json")


def test_the_bundled_repository_exports_valid_advisories(cli: Any, tmp_path: Path) -> None:
    from builders import PROJECT_ROOT

    exported = cli(
        "export", "--format", "osv", "--repo", str(PROJECT_ROOT), "--output", str(tmp_path / "osv")
    )
    assert exported.code == 0, exported.err
    bundled = len(list((PROJECT_ROOT / "repository").rglob("test.json")))  # every one has an id
    assert f"{bundled} advisories" in exported.out
    for path in (tmp_path / "osv").glob("x_*.json"):
        reference_schema_accepts(json.loads(path.read_text()), "osv-schema.json")


def test_sarif_has_a_result_for_each_lve_that_reproduced_keyed_by_its_id(
    cli: Any, tmp_path: Path, adding: Running
) -> None:
    git = GitRepo(tmp_path / "lves")
    lves = RepoBuilder(git.root)
    wrong = [instance("3", True, a=1, b=2), instance("100", False, a=99, b=1)]  # 99 + 1 comes back as 101
    lves.lve("cat/wrong", {"tags": [{"name": "atlas", "value": "AML.T0054"}, {"name": "severity", "value": "high"}]},
             instances={"i.jsonl": wrong})  # fmt: skip
    lves.lve("cat/right", instances=ROWS)
    assert cli("ids", "assign", "--today", "2026-11-26", cwd=git.root).code == 0
    assert cli("run", "--all", "--report", "run.jsonl", cwd=git.root).code == 0

    exported = cli("export", "--format", "sarif", "run.jsonl", "--output", "lvegit.sarif", cwd=git.root)
    assert exported.code == 0, exported.err
    log = json.loads((git.root / "lvegit.sarif").read_text())
    [run] = log["runs"]
    [result] = run["results"]
    assert result["ruleId"] == "LVE-2026-0002"  # cat/right is 0001
    assert (
        result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == f"{lve('wrong')}/test.json"
    )
    assert result["properties"] == {
        "model": "openai/gpt-4o-mini",
        "versions": ["gpt-4o-mini-2026-01-01"],  # as the server named itself
        "unsafe": 1,
        "attempts": 2,
    }
    [rule] = run["tool"]["driver"]["rules"]
    assert rule["id"] == "LVE-2026-0002" and rule["name"] == "wrong"
    assert rule["properties"]["tags"] == ["security", "llm", "atlas:AML.T0054"]
    score = float(rule["properties"]["security-severity"])
    assert 0 < score <= 10 and result["level"] == (
        "error" if score >= 7 else "warning" if score >= 4 else "note"
    )

    again = cli("export", "--format", "sarif", "run.jsonl", cwd=git.root)
    assert (
        json.loads(again.out)["runs"][0]["results"][0]["partialFingerprints"] == result["partialFingerprints"]
    )
    replayed = cli("replay", "--all", "--no-cache", "--report", "replay.jsonl", cwd=git.root)
    assert replayed.code in (0, 1)
    refused = cli("export", "--format", "sarif", "replay.jsonl", cwd=git.root)
    assert refused.code == 2 and "reads run reports" in refused.err
    reference_schema_accepts(log, "sarif-schema-2.1.0.json")  # last: it may skip
