"""`lvegit export --format osv` (advisories from the run history) and `--format sarif` (code scanning from a
run report), each checked against its official JSON Schema (tests/reference) and for what it says."""

from __future__ import annotations

import json
import shutil
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
    statuses = json.loads(cli("status", "--format", "json", "--repo", str(PROJECT_ROOT)).out)["statuses"]
    reproduced = {entry["lve"] for entry in statuses if entry["first_reproduced"]}
    records = [json.loads(path.read_text()) for path in sorted((tmp_path / "osv").glob("x_*.json"))]
    for record in records:
        folder = PROJECT_ROOT / record["database_specific"]["path"]
        lines = [
            json.loads(text)
            for file in folder.glob("instances/*.jsonl")
            for text in file.read_text().splitlines()
        ]
        unsafe = any(line.get("passed") is False for line in lines)
        assert bool(record["affected"]) == (
            unsafe or folder.relative_to(PROJECT_ROOT).as_posix() in reproduced
        )
    assert sum(bool(record["affected"]) for record in records) == 16  # of 18: two have no unsafe evidence
    for record in records:
        reference_schema_accepts(record, "osv-schema.json")


def test_recorded_instances_are_evidence_too(cli: Any, tmp_path: Path) -> None:
    """No history at all: an unsafe recorded instance makes its model affected, with the version that answered."""
    git = GitRepo(tmp_path / "lves")
    wrong = instance("100", False, a=99, b=1)
    wrong["run_info"] = {"timestamp": "2026-12-01T10:00:00Z", "model": "gpt-4o-mini-2024-07-18"}
    RepoBuilder(git.root).lve("cat/wrong", instances={"i.jsonl": [instance("3", True, a=1, b=2), wrong]})
    assert cli("ids", "assign", "--today", "2026-11-26", cwd=git.root).code == 0
    [record] = [json.loads(text) for text in cli("export", "--format", "osv", cwd=git.root).out.splitlines()]
    assert record["affected"] == [
        {
            "versions": ["gpt-4o-mini-2024-07-18"],
            "database_specific": {
                "model": "openai/gpt-4o-mini",
                "state": "recorded",
                "summary": "1 of 2 recorded instances unsafe",
                "recorded_instances": {"unsafe": 1, "instances": 2},
            },
        }
    ]
    assert record["modified"] == "2026-12-01T10:00:00Z"  # when the newest instance was recorded
    reference_schema_accepts(record, "osv-schema.json")


def test_a_record_changes_only_when_its_evidence_does(cli: Any, tmp_path: Path) -> None:
    """A second export with nothing new writes the same bytes; a new reproduction of one LVE changes its
    record and the index, and a run of only failed attempts changes nothing."""
    git = GitRepo(tmp_path / "lves")
    lves = RepoBuilder(git.root)
    for name in ("one", "two", "three"):
        lves.lve(f"cat/{name}", instances=ROWS)
    assert cli("ids", "assign", "--today", "2026-11-26", cwd=git.root).code == 0
    folder, model = git.root / "history", "acme/chat"
    history_run(
        folder, "2026-12-01T03:00:00Z", {(lve(name), model, "v1"): (2, 3) for name in ("one", "two", "three")}
    )

    def export(name: str) -> dict[str, bytes]:
        out = tmp_path / name
        assert cli("export", "--format", "osv", "--output", str(out), cwd=git.root).code == 0
        return {path.name: path.read_bytes() for path in out.iterdir()}

    first = export("first")
    assert export("second") == first
    history_run(folder, "2026-12-08T03:00:00Z", {(lve("two"), model, "v2"): (0, 0)}, failed=4)
    assert export("after-errors") == first
    history_run(folder, "2026-12-15T03:00:00Z", {(lve("one"), model, "v2"): (4, 0)})
    third = export("third")
    assert sorted(name for name in third if third[name] != first[name]) == [
        "index.json",
        "x_LVE-2026-0001.json",
    ]
    assert json.loads(third["x_LVE-2026-0001.json"])["modified"] == "2026-12-15T03:00:00Z"


def test_a_retired_id_becomes_a_withdrawn_record(cli: Any, tmp_path: Path) -> None:
    git = GitRepo(tmp_path / "lves")
    lves = RepoBuilder(git.root)
    for name in ("kept", "gone"):
        lves.lve(f"cat/{name}", instances=ROWS)
    assert cli("ids", "assign", "--today", "2026-11-26", cwd=git.root).code == 0
    git.commit("ids")
    shutil.rmtree(git.root / lve("gone"))
    assert cli("ids", "assign", "--today", "2026-12-02", cwd=git.root).code == 0
    records = {
        json.loads(text)["id"]: json.loads(text)
        for text in cli("export", "--format", "osv", cwd=git.root).out.splitlines()
    }
    withdrawn = records["x_LVE-2026-0001"]  # cat/gone sorts first
    assert withdrawn["withdrawn"] == withdrawn["modified"] == "2026-12-02T00:00:00Z"
    assert withdrawn["affected"] == [] and withdrawn["database_specific"]["path"] == lve("gone")
    assert "withdrawn" not in records["x_LVE-2026-0002"]
    reference_schema_accepts(withdrawn, "osv-schema.json")


def test_a_description_cannot_put_html_or_hidden_text_into_details(cli: Any, tmp_path: Path) -> None:
    """OSV readers render `details` as markdown: raw HTML, links and bidi overrides come out as text."""
    git = GitRepo(tmp_path / "lves")
    hostile = "Adds <img src=x onerror=alert(1)> [click](javascript:alert(1)) \u202eevil\x1b[31m\nsecond line"
    RepoBuilder(git.root).lve("cat/hostile", {"description": hostile}, instances=ROWS)
    assert cli("ids", "assign", "--today", "2026-11-26", cwd=git.root).code == 0
    [record] = [json.loads(text) for text in cli("export", "--format", "osv", cwd=git.root).out.splitlines()]
    details = record["details"]
    assert "<img" not in details and "&lt;img" in details and "\\[click\\]" in details
    assert "\u202e" not in details and "\x1b" not in details and "\nsecond line" in details
    assert "\u202e" not in record["summary"] and "\x1b" not in record["summary"]


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
    reference_schema_accepts(log, "sarif-schema-2.1.0.json")


def test_a_repository_address_other_than_https_is_never_a_reference_or_a_help_uri(
    cli: Any, tmp_path: Path, adding: Running
) -> None:
    """`.lverepo` set to `javascript:` became an OSV reference and a SARIF helpUri: now both exports stop
    with an error naming the file, and write nothing."""
    git = GitRepo(tmp_path / "lves")
    RepoBuilder(git.root).lve("cat/wrong", instances={"i.jsonl": [instance("100", False, a=99, b=1)]})
    assert cli("ids", "assign", "--today", "2026-11-26", cwd=git.root).code == 0
    assert cli("run", "--all", "--report", "run.jsonl", cwd=git.root).code == 0
    (git.root / ".lverepo").write_text("javascript:alert(document.cookie)//\n")
    for command in (["--format", "osv"], ["--format", "sarif", "run.jsonl"]):
        refused = cli("export", *command, cwd=git.root)
        assert refused.code == 1, refused.out
        assert ".lverepo: the repository's address must be an https:// URL" in refused.err
        assert "javascript" not in refused.out


def test_records_written_to_standard_output_go_through_the_escaping_module(cli: Any, tmp_path: Path) -> None:
    """On a terminal or in a CI log, the records hold no control or invisible character (a C1 CSI, a bidi
    override) and no legacy `##[command]`: ASCII-only JSON that reads back as the same record."""
    git = GitRepo(tmp_path / "lves")
    hostile = "Adds \u202eevil\x9b2J ##[error]forged"
    tags = [{"name": "paper", "value": hostile}]  # a record keeps tags as they are: data, not text shown
    RepoBuilder(git.root).lve("cat/hostile", {"description": hostile, "tags": tags}, instances=ROWS)
    assert cli("ids", "assign", "--today", "2026-11-26", cwd=git.root).code == 0
    streamed = cli("export", "--format", "osv", cwd=git.root).out
    assert streamed.isascii() and "##[" not in streamed
    [record] = [json.loads(text) for text in streamed.splitlines()]
    assert record["database_specific"]["tags"] == tags
