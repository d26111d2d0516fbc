"""`lvegit export --format sarif`: alerts GitHub code scanning can show (located in the scanned repository,
help in markdown, a default level, a category), their severity the one model's, and `sarif-multitool
validate` with its SARIF and GitHub rules finding nothing to warn about."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from lvegit.run.attempt import Attempt

from builders import PROJECT_ROOT, GitRepo, RepoBuilder, reference_schema_accepts

MULTIPLY = "repository/reliability/arithmetic/multiply/openai--gpt-4o-mini"
CAPITAL = "repository/reliability/consistency/capital_city/openai--gpt-4o-mini"
TIDY = "repository/security/excessive_agency/tidy_downloads/openai--gpt-4o-mini"
MULTITOOL_HOME = Path(os.environ.get("LVEGIT_TOOLS_DIR") or PROJECT_ROOT / ".tools")  # the test command's


def run_report(path: Path, runs: dict[tuple[str, str], tuple[int, int]]) -> Path:
    """A run report: for each (LVE, model), (unsafe, safe) complete attempts and one that failed."""
    lines = []
    for (lve, model), (unsafe, safe) in runs.items():
        for number, verdict in enumerate([False] * unsafe + [True] * safe + [None]):
            attempt = Attempt(
                id=f"{lve}|{model}|{number}",
                lve=lve,
                model=model,
                args={},
                repetition=number,
                status="complete" if verdict is not None else "error",
                backend="openai",
                resolved_model=f"{model.rsplit('/', 1)[-1]}-v2",
                verdict=verdict,
                started_at=1_791_000_000.0,
                finished_at=1_791_000_001.0,
            )
            lines.append(json.dumps(attempt.as_json()) + "\n")
    path.write_text("".join(lines))
    return path


def multitool() -> Path:
    """sarif-multitool, as the README's test command installs it (PATH, or .tools/)."""
    found = shutil.which("sarif-multitool") or shutil.which("Sarif.Multitool")
    for candidate in (
        MULTITOOL_HOME / "node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool",
        MULTITOOL_HOME / "node_modules/.bin/sarif-multitool",
    ):
        if not found and candidate.is_file():
            found = str(candidate)
    if not found:
        pytest.skip(
            f"sarif-multitool not found (PATH, {MULTITOOL_HOME}): npm install @microsoft/sarif-multitool"
        )
    return Path(found)


def multitool_findings(log: Path, tmp_path: Path) -> list[str]:
    """What `sarif-multitool validate --rule-kind "Sarif;Gh"` reports as errors and warnings."""
    out = tmp_path / "validation.sarif"
    done = subprocess.run(
        [str(multitool()), "validate", str(log), "--rule-kind", "Sarif;Gh", "--level", "Error;Warning", "--output", str(out)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0 and out.is_file(), done.stdout + done.stderr
    [run] = json.loads(out.read_text())["runs"]
    return [f"{r['ruleId']} {r['level']}: {r['message'].get('arguments')}" for r in run.get("results", [])]


def scan_of_the_bundled_repository(cli: Any, tmp_path: Path) -> dict[str, Any]:
    report = run_report(
        tmp_path / "run.jsonl",
        {
            (MULTIPLY, "demo/assistant"): (3, 1),
            (CAPITAL, "demo/assistant"): (2, 0),
            (TIDY, "demo/assistant"): (1, 1),
        },
    )
    out = tmp_path / "lvegit.sarif"
    exported = cli("export", "--format", "sarif", str(report), "--output", str(out), cwd=PROJECT_ROOT)
    assert exported.code == 0, exported.err
    return dict(json.loads(out.read_text()))


def test_a_scan_of_the_bundled_repository_is_what_code_scanning_can_show(cli: Any, tmp_path: Path) -> None:
    log = scan_of_the_bundled_repository(cli, tmp_path)
    [run] = log["runs"]
    assert run["automationDetails"] == {"id": "lvegit/demo--assistant/"}
    for result in run["results"]:  # the LVE repository scans itself: each at its test.json, a file of it
        uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert (PROJECT_ROOT / uri).is_file() and uri.endswith("/test.json")
    rules = {rule["id"]: rule for rule in run["tool"]["driver"]["rules"]}
    multiply = rules["LVE-2026-0005"]
    assert multiply["defaultConfiguration"] == {"level": "note"}  # 3.9 low
    help_text = multiply["help"]["markdown"]
    assert help_text.startswith("gpt-4o-mini sometimes multiplies two four-digit numbers incorrectly.")
    assert f"lvegit run {MULTIPLY} --model MODEL" in help_text and "**How to reproduce**" in help_text
    assert (
        f"(https://github.com/lvegit/lvegit/tree/main/{MULTIPLY}) (OSV record `x_LVE-2026-0005`)" in help_text
    )
    reference_schema_accepts(log, "sarif-schema-2.1.0.json")
    (tmp_path / "scan.sarif").write_text(json.dumps(log))
    assert multitool_findings(tmp_path / "scan.sarif", tmp_path) == []


def test_one_lves_severity_is_the_same_number_in_every_reader(cli: Any, tmp_path: Path) -> None:
    """multiply over the bundled history: status, the site (its page and the status page), OSV, SARIF and
    the pull request comment all say 3.9."""
    from lvegit.github.flow import _history
    from lvegit.lve.repo import Repository

    status = cli("status", MULTIPLY, cwd=PROJECT_ROOT)
    [said] = [line.split()[1] for line in status.out.splitlines() if line.startswith("  severity")]
    site = tmp_path / "site"
    assert cli("site", str(site), "--repo", str(PROJECT_ROOT)).code == 0
    [page] = (site / "lves").glob("reliability-arithmetic-multiply-*.html")
    on_page = page.read_text()
    status_page = (site / "status.html").read_text()
    row = next(line for line in status_page.split("<tr>") if "multiply" in line)
    osv = json.loads((site / "osv" / "x_LVE-2026-0005.json").read_text())
    [rule] = [
        rule
        for rule in scan_of_the_bundled_repository(cli, tmp_path)["runs"][0]["tool"]["driver"]["rules"]
        if rule["id"] == "LVE-2026-0005"
    ]
    _statuses, comment, problem = _history(Repository(PROJECT_ROOT), PROJECT_ROOT / "history", [MULTIPLY])
    assert problem is None
    assert said == "3.9"
    assert "<strong>3.9 low</strong>" in on_page and re.findall(r'class="severity[^"]*">([^<]*)<', row) == [
        "3.9 low"
    ]
    assert osv["database_specific"]["severity"]["score"] == 3.9
    assert rule["properties"]["security-severity"] == "3.9"
    assert comment[MULTIPLY].startswith("3.9 low:")


def test_a_severe_lve_is_high_and_the_history_counts(cli: Any, tmp_path: Path) -> None:
    """Declared critical, reproducing on four models of three vendors: an error-level alert (GitHub's
    default failure threshold), which one run on one model alone would not make."""
    git = GitRepo(tmp_path / "lves")
    RepoBuilder(git.root).lve("cat/leak", {"impact": "critical"})
    leak = "repository/cat/leak/openai--gpt-4o-mini"
    models = ["openai/a", "openai/b", "acme/c", "other/d"]
    one = run_report(tmp_path / "one.jsonl", {(leak, "openai/a"): (20, 0)})
    wide = run_report(tmp_path / "wide.jsonl", {(leak, model): (20, 0) for model in models})
    for report, level in ((one, "warning"), (wide, "error")):
        exported = cli("export", "--format", "sarif", str(report), cwd=git.root)
        assert exported.code == 0, exported.err
        [run] = json.loads(exported.out)["runs"]
        [rule] = run["tool"]["driver"]["rules"]
        assert rule["defaultConfiguration"]["level"] == level
        assert {result["level"] for result in run["results"]} == {level}
    assert float(rule["properties"]["security-severity"]) >= 7.0


def test_a_scan_from_another_repository_points_at_a_file_of_it(cli: Any, tmp_path: Path) -> None:
    """The scan workflow's layout: the application's repository checked out, the LVE corpus beside it in
    a folder of its own. Alerts go to a file of the application's repository, at the line naming the model."""
    app = GitRepo(tmp_path / "app")
    workflow = app.root / ".github/workflows/lvegit-scan.yml"
    workflow.parent.mkdir(parents=True)
    workflow.write_text("name: LVE scan\nenv:\n  MODEL: openai/gpt-4o-mini\n")
    corpus = GitRepo(app.root / "lve-corpus")
    RepoBuilder(corpus.root).lve("cat/wrong")
    report = run_report(
        tmp_path / "run.jsonl", {("repository/cat/wrong/openai--gpt-4o-mini", "openai/gpt-4o-mini"): (2, 0)}
    )
    refused = cli("export", "--repo", "lve-corpus", "--format", "sarif", str(report), cwd=app.root)
    assert (
        refused.code == 2
        and "--location" in refused.err
        and "not the repository this scan runs in" in refused.err
    )
    exported = cli(
        "export", "--repo", "lve-corpus", "--format", "sarif", str(report),
        "--location", ".github/workflows/lvegit-scan.yml", cwd=app.root,
    )  # fmt: skip
    assert exported.code == 0, exported.err
    [result] = json.loads(exported.out)["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": ".github/workflows/lvegit-scan.yml"},
        "region": {"startLine": 3},
    }
    outside = cli(
        "export",
        "--repo",
        "lve-corpus",
        "--format",
        "sarif",
        str(report),
        "--location",
        str(report),
        cwd=app.root,
    )
    assert outside.code == 2 and "no file of the scanned repository" in outside.err


def test_a_description_cannot_put_markup_into_the_rules_help(cli: Any, tmp_path: Path) -> None:
    git = GitRepo(tmp_path / "lves")
    RepoBuilder(git.root).lve(
        "cat/odd", {"description": "Adds <script>alert(1)</script> [x](javascript:1) \u202e"}
    )
    report = run_report(tmp_path / "run.jsonl", {("repository/cat/odd/openai--gpt-4o-mini", "a/m"): (1, 0)})
    exported = cli("export", "--format", "sarif", str(report), cwd=git.root)
    [rule] = json.loads(exported.out)["runs"][0]["tool"]["driver"]["rules"]
    markdown = rule["help"]["markdown"]
    assert "<script>" not in markdown and "&lt;script&gt;" in markdown and "\\[x\\]" in markdown
    assert "\u202e" not in markdown
