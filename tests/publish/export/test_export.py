"""`lvegit export`: run and replay reports as JUnit XML (read back with junitparser), AVID reports (read back
into avidtools' models) and garak's report JSONL (checked against the fields of garak's Attempt and eval
entries)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from builders import RepoBuilder, instance
from servers import Running

# garak.attempt.Attempt.as_dict's keys, as garak writes an attempt entry
GARAK_ATTEMPT_KEYS = {
    "entry_type", "uuid", "previous_attempt_id", "seq", "status", "probe_classname", "probe_params",
    "targets", "prompt", "outputs", "detector_results", "notes", "goal", "conversations",
    "reverse_translation_outputs", "intent",
}  # fmt: skip
LVE = "repository/dummy/add/openai--gpt-4o-mini"


@pytest.fixture
def replayed(repo: RepoBuilder, cli: Any) -> Path:
    """A replay report: one instance reproduces, one does not, one cannot be judged, one is skipped."""
    rows = [
        instance("3", True, a=1, b=2),
        instance("5", True, a=1, b=2),  # the checker says unsafe now: a mismatch
        instance("three", True, a=1, b=2),  # int("three") fails: an error
    ]
    repo.lve(instances={"i.jsonl": rows})
    repo.lve(
        "privacy/mail",
        {"checker_args": {"checker_name": "PII_Checker", "entities": ["EMAIL_ADDRESS"]}},
        instances={"i.jsonl": [instance("write to <EMAIL_ADDRESS>", False, a=1, b=2)]},
    )
    result = cli("replay", "--all", "--no-cache", "--report", "replay.jsonl", cwd=repo.root)
    assert result.code == 1
    return repo.root / "replay.jsonl"


def test_replay_reports_become_junit_xml(replayed: Path, cli: Any, tmp_path: Path) -> None:
    from junitparser import Error, Failure, JUnitXml, Skipped

    out = tmp_path / "junit.xml"
    result = cli("export", "--format", "junit", str(replayed), "--output", str(out), cwd=replayed.parent)
    assert (result.code, result.err) == (0, f"lvegit: 4 attempts written to {out} as junit\n")
    xml = JUnitXml.fromfile(str(out))
    suites = {suite.name: suite for suite in xml}
    assert sorted(suites) == [LVE, "repository/privacy/mail/openai--gpt-4o-mini"]
    cases = {case.name: case.result for case in suites[LVE]}
    assert list(cases) == ["i.jsonl:1", "i.jsonl:2", "i.jsonl:3"]
    assert cases["i.jsonl:1"] == []
    assert (
        isinstance(cases["i.jsonl:2"][0], Failure)
        and cases["i.jsonl:2"][0].message == "recorded safe, now unsafe"
    )
    assert isinstance(cases["i.jsonl:3"][0], Error) and "three" in cases["i.jsonl:3"][0].message
    [mail] = suites["repository/privacy/mail/openai--gpt-4o-mini"]
    assert isinstance(mail.result[0], Skipped) and "redacted" in mail.result[0].message
    assert (xml.tests, xml.failures, xml.errors, xml.skipped) == (4, 1, 1, 1)


def test_run_reports_become_avid_reports_and_a_garak_report(
    repo: RepoBuilder, cli: Any, adding: Running, tmp_path: Path
) -> None:
    repo.lve(instances={"i.jsonl": [instance("3", True, a=1, b=2), instance("100", False, a=99, b=1)]})
    assert cli("run", "--all", "--repeat", "2", "--report", "run.jsonl", cwd=repo.root).code == 0
    avid = cli("export", "--format", "avid", "run.jsonl", cwd=repo.root)
    assert avid.code == 0
    [report] = [json.loads(line) for line in avid.out.splitlines()]
    from avidtools.datamodels.report import Report

    with warnings.catch_warnings():  # avidtools' models are written for pydantic 1
        warnings.simplefilter("ignore")
        parsed = Report(**report)
    assert parsed.affects.artifacts[0].name == "openai/gpt-4o-mini"
    assert parsed.problemtype.description.value == "adds two numbers wrongly"
    assert [(m.name, m.results["unsafe"], m.results["judged"]) for m in parsed.metrics] == [
        ("unsafe share", 2, 4),
        ("live reproduction rate", 2, 4),
    ]
    assert report["metrics"][1]["results"]["interval_95"] == [0.15, 0.85]  # Wilson, 2 of 4
    assert report["references"][0]["label"] == LVE

    garak = cli("export", "--format", "garak", "run.jsonl", cwd=repo.root)
    entries = [json.loads(line) for line in garak.out.splitlines()]
    kinds = [entry["entry_type"] for entry in entries]
    assert kinds == [
        "start_run setup",
        "init",
        "attempt",
        "attempt",
        "attempt",
        "attempt",
        "eval",
        "completion",
    ]
    attempts = [entry for entry in entries if entry["entry_type"] == "attempt"]
    assert all(set(entry) == GARAK_ATTEMPT_KEYS and entry["status"] == 2 for entry in attempts)
    assert attempts[0]["prompt"]["turns"] == [
        {"role": "user", "content": {"text": "Compute 1 + 2.", "lang": "*", "data_path": None, "data_type": None,
                                     "data_checksum": None, "notes": {}}}
    ]  # fmt: skip
    assert [a["outputs"][0]["text"] for a in attempts] == ["3", "3", "101", "101"]  # 99 + 1 goes wrong
    assert [a["detector_results"] for a in attempts] == [
        {"lvegit.LambdaChecker": [s]} for s in (0.0, 0.0, 1.0, 1.0)
    ]
    assert attempts[2]["notes"]["source"] == f"{LVE}/instances/i.jsonl:2"
    [evaluation] = [entry for entry in entries if entry["entry_type"] == "eval"]
    assert evaluation == {
        "entry_type": "eval",
        "probe": f"lvegit.{LVE}",
        "detector": "lvegit.LambdaChecker",
        "passed": 2,
        "fails": 2,
        "nones": 0,
        "total_evaluated": 4,
        "total_processed": 4,
    }
    assert entries[1]["run"] == entries[-1]["run"] == entries[0]["transient.run_id"]
    again = cli("export", "--format", "garak", "run.jsonl", cwd=repo.root)
    assert again.out == garak.out  # ids derive from the attempts: the same report, the same file


def test_a_replay_report_replaces_only_a_replay_report(replayed: Path, cli: Any) -> None:
    root = replayed.parent
    again = cli("replay", "--all", "--no-cache", "--report", "replay.jsonl", cwd=root)
    assert again.code == 1 and "error" not in again.err  # the earlier replay report is replaced
    (root / "run.jsonl").write_text('{"lvegit_run": {"settings": {"repeat": 3}, "command": "lvegit run"}}\n')
    refused = cli("replay", "--all", "--no-cache", "--report", "run.jsonl", cwd=root)
    assert refused.code == 2 and "run.jsonl is a run report, not a replay report" in refused.err
    (root / "notes.txt").write_text("mine\n")
    assert cli("replay", "--all", "--no-cache", "--report", "notes.txt", cwd=root).code == 2
    assert (root / "notes.txt").read_text() == "mine\n"


def test_an_avid_report_carries_the_lves_avid_tags_as_its_impact(
    repo: RepoBuilder, cli: Any, adding: Running
) -> None:
    tags = [{"name": "avid", "value": value} for value in ("P0204", "S0403", "P0204")]
    tags.append({"name": "owasp-llm", "value": "2025:LLM09"})  # no AVID counterpart: not an impact
    wrong = {"i.jsonl": [instance("100", False, a=99, b=1)]}
    repo.lve("cat/tagged", {"tags": tags}, instances=wrong)
    repo.lve("cat/untagged", {"tags": []}, instances=wrong)
    assert cli("run", "--all", "--report", "run.jsonl", cwd=repo.root).code == 0
    reports = [
        json.loads(line)
        for line in cli("export", "--format", "avid", "run.jsonl", cwd=repo.root).out.splitlines()
    ]
    impact = {report["references"][0]["label"]: report.get("impact") for report in reports}
    from avidtools.datamodels.report import Report

    with warnings.catch_warnings():  # avidtools' models are written for pydantic 1
        warnings.simplefilter("ignore")
        parsed = Report(**reports[0])
    assert parsed.impact is not None and parsed.impact.avid.taxonomy_version == "0.2"
    assert impact["repository/cat/tagged/openai--gpt-4o-mini"] == {
        "avid": {
            "vuln_id": None,
            "risk_domain": ["Performance", "Security"],
            "sep_view": ["P0204: Accuracy", "S0403: Adversarial Example"],
            "lifecycle_view": ["L05: Evaluation"],
            "taxonomy_version": "0.2",
        }
    }
    assert impact["repository/cat/untagged/openai--gpt-4o-mini"] is None
