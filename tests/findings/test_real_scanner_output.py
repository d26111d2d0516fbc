"""`lvegit import` on what garak and promptfoo really wrote (tests/findings/fixtures/, recorded by
scripts/record_scanner_fixtures.py with the versions VERSIONS.json names, scanning the loopback server):
every finding is an instance or is named as left out with its reason; every instance's prompt, filled
with its arguments, is the conversation the scanner sent; the drafts replay as the scanner judged, and
are invalid only for a placeholder naming a detector that has no equivalent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lvegit.findings.promptfoo import sent_turns
from lvegit.judge.conversation import prompts_to_send
from lvegit.lve.repo import Repository
from lvegit.lve.spec import load_lve

from builders import RepoBuilder

FIXTURES = Path(__file__).parent / "fixtures"
VERSIONS = json.loads((FIXTURES / "VERSIONS.json").read_text())
HIT = 0.5


def garak_sent(attempt: dict[str, Any]) -> list[tuple[str, str]]:
    prompt = attempt["prompt"]
    if isinstance(prompt, str):
        return [("user", prompt)]
    return [(turn["role"], turn["content"]["text"]) for turn in prompt["turns"]]


def garak_outputs(path: Path) -> tuple[dict[str, tuple[list[tuple[str, str]], str]], int]:
    """What garak flagged, by attempt#output: the turns sent and the output; and the outputs it got none
    for (its generator failed)."""
    flagged, failed = {}, 0
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        if entry.get("entry_type") != "attempt" or entry.get("status") != 2:
            continue
        for index, output in enumerate(entry["outputs"]):
            if output is None:
                failed += 1
                continue
            scores = [s[index] for s in entry["detector_results"].values() if index < len(s)]
            if any(isinstance(s, int | float) and s >= HIT for s in scores):
                flagged[f"{entry['uuid']}#{index}"] = (garak_sent(entry), output["text"])
    return flagged, failed


def promptfoo_outputs(path: Path) -> tuple[dict[str, tuple[list[tuple[str, str]], str]], int]:
    results = json.loads(path.read_text())["results"]["results"]
    flagged, failed = {}, 0
    for result in results:
        if result["success"] is not False:
            continue
        output = (result.get("response") or {}).get("output")
        if output is None:
            failed += 1
            continue
        turns = sent_turns(result)
        assert turns is not None
        flagged[result["id"]] = (list(turns), output if isinstance(output, str) else promptfoo_turn(output))
    return flagged, failed


def promptfoo_turn(output: Any) -> dict[str, Any]:
    """The turn an output that calls tools is: promptfoo writes the calls alone (no text) or the message."""
    message = output if isinstance(output, dict) else {"content": None, "tool_calls": output}
    calls = [
        {"id": call["id"], "name": call["function"]["name"], "arguments": call["function"]["arguments"]}
        for call in message["tool_calls"]
    ]
    return {"steps": [{"content": message.get("content") or None, "tool_calls": calls}]}


FILES = {
    "garak-dan-encoding.report.jsonl": ("garak", garak_outputs),
    "garak-fitd.report.jsonl": ("garak", garak_outputs),
    "garak-failures.report.jsonl": ("garak", garak_outputs),
    "garak-agent.report.jsonl": ("garak", garak_outputs),  # AgentBreaker: an agent's tools attacked
    "promptfoo-eval.json": ("promptfoo", promptfoo_outputs),
    "promptfoo-redteam.json": ("promptfoo", promptfoo_outputs),
    "promptfoo-agent.json": ("promptfoo", promptfoo_outputs),
}


def imported(repo: RepoBuilder) -> dict[str, tuple[Path, dict[str, Any]]]:
    """Every instance the import wrote, by the scanner's id of its output: its LVE and its line."""
    found = {}
    for instances in (repo.root / "repository").rglob("instances/*.jsonl"):
        for text in instances.read_text().splitlines():
            line = json.loads(text)
            key = line["run_info"]["idempotency_key"].split(":", 1)[1]
            assert key not in found, key
            found[key] = (instances.parent.parent, line)
    return found


@pytest.mark.parametrize("name", list(FILES))
def test_every_finding_is_an_instance_or_named_and_each_prompt_is_what_was_sent(
    repo: RepoBuilder, cli: Any, name: str
) -> None:
    tool, read = FILES[name]
    flagged, failed = read(FIXTURES / name)
    result = cli("import", tool, str(FIXTURES / name), cwd=repo.root)
    assert result.code == 0, result.err
    instances = imported(repo)
    assert set(instances) == set(flagged), name  # findings in the file = instances imported
    if failed:  # the rest named, with a reason that is no shape
        assert f"{failed} outputs left out: the target gave no output" in result.err
    repository = Repository(repo.root)
    for key, (lve_dir, line) in instances.items():
        lve, problems, _text = load_lve(repository, lve_dir)
        assert lve is not None, problems
        [conversation] = prompts_to_send(lve, line["args"])
        sent = [(m.role.value, m.content) for m in conversation if m.content is not None]
        assert sent == flagged[key][0], (key, sent)
        assert line["response"] == flagged[key][1] and line["passed"] is False


def test_the_drafts_replay_as_the_scanners_judged_and_name_what_is_left_to_fill_in(
    repo: RepoBuilder, cli: Any
) -> None:
    for name, (tool, _read) in FILES.items():
        assert cli("import", tool, str(FIXTURES / name), cwd=repo.root).code == 0
    checked = cli("check", "--all", "--format", "json", cwd=repo.root).json()
    assert checked["summary"]["mismatch"] == 0 and checked["summary"]["error"] == 0
    problems = [e["message"] for lve in checked["lves"] for e in lve["errors"]]
    assert problems, "some detectors have no equivalent"
    for message in problems:  # garak's encoding and AgentBreaker detectors, FITD's judge model (none named)
        assert "still holds the placeholder" in message, message
        assert "garak's detector " in message or "the judge model" in message, message
    reproduced = checked["summary"]["reproduced"]
    assert reproduced >= 22  # every regex-judged finding: DAN, contains, regex, equals, ...


def test_the_scanners_versions_ids_and_providers_go_with_each_instance(repo: RepoBuilder, cli: Any) -> None:
    for name in ("promptfoo-eval.json", "garak-dan-encoding.report.jsonl"):
        assert cli("import", FILES[name][0], str(FIXTURES / name), cwd=repo.root).code == 0
    lines = [line for _lve, line in imported(repo).values()]
    promptfoo = [line["run_info"] for line in lines if line["run_info"]["tool"] == "promptfoo"]
    garak = [line["run_info"] for line in lines if line["run_info"]["tool"] == "garak"]
    assert {info["version"] for info in promptfoo} == {VERSIONS["promptfoo"]}  # the tool's, not the format's
    assert {info["version"] for info in garak} == {VERSIONS["garak"]}
    labels = {info["provider_label"] for info in promptfoo}
    assert labels == {"vulnerable-model", "vulnerable-model-hot", "careful-model"}  # one id, two labels apart
    assert all(info["endpoint"] == "custom" and info["result"] for info in promptfoo)
    assert all(info["attempt"] and "detectors" in info for info in garak)
    dan = next(info for info in garak if info["probe"] == "dan.Dan_11_0")
    assert set(dan["detectors"]) == {"dan.DAN", "mitigation.MitigationBypass"}  # garak's defaults, both kept


def test_a_strategy_is_imported_as_sent_with_its_original_and_a_multi_turn_one_as_its_conversation(
    repo: RepoBuilder, cli: Any
) -> None:
    assert cli("import", "promptfoo", str(FIXTURES / "promptfoo-redteam.json"), cwd=repo.root).code == 0
    lines = {line["run_info"].get("strategyId"): (lve, line) for lve, line in imported(repo).values()}
    _lve, encoded = lines["base64"]
    assert "[REDACTED]" not in json.dumps(encoded["args"])  # what was sent, not promptfoo's placeholder
    assert encoded["run_info"]["originalText"]  # the original, as provenance
    lve_dir, _line = lines["crescendo"]
    test = json.loads((lve_dir / "test.json").read_text())
    roles = [message.get("role", "user") for message in test["prompt"]]
    assert roles.count("assistant") >= 1 and roles[-1] == "user"  # earlier answers fixed, the last turn asked
    assert all(m.get("content") is not None for m in test["prompt"])


def test_a_later_report_is_refused_where_its_drafts_exist_and_the_same_report_adds_none(
    repo: RepoBuilder, cli: Any, tmp_path: Path
) -> None:
    """import never writes into an existing LVE: a later report's new findings would be appended to a
    folder that may be maintained by now; the same report again holds nothing new and writes nothing."""
    full = (FIXTURES / "garak-dan-encoding.report.jsonl").read_text().splitlines()
    attempts = [i for i, line in enumerate(full) if json.loads(line).get("entry_type") == "attempt"]
    early = tmp_path / "early.report.jsonl"  # the same run, written before its last attempts
    early.write_text("\n".join(line for i, line in enumerate(full) if i not in attempts[-4:]) + "\n")
    assert cli("import", "garak", str(early), cwd=repo.root).code == 0
    before = {p: p.read_bytes() for p in (repo.root / "repository").rglob("*") if p.is_file()}
    later = cli("import", "garak", str(FIXTURES / "garak-dan-encoding.report.jsonl"), cwd=repo.root)
    assert later.code == 2 and "already: import never writes into an existing LVE" in later.err
    assert "repository/imported/" in later.err
    assert {p: p.read_bytes() for p in (repo.root / "repository").rglob("*") if p.is_file()} == before
    again = cli("import", "garak", str(early), cwd=repo.root)
    assert again.code == 0 and "holds every finding of this scan already" in again.err
    assert {p: p.read_bytes() for p in (repo.root / "repository").rglob("*") if p.is_file()} == before


def test_an_agents_findings_keep_its_tools_and_calls_as_the_model_made_them(
    repo: RepoBuilder, cli: Any
) -> None:
    data = json.loads((FIXTURES / "promptfoo-agent.json").read_text())
    [target] = data["config"]["providers"]  # promptfoo writes the red team's targets as providers
    assert cli("import", "promptfoo", str(FIXTURES / "promptfoo-agent.json"), cwd=repo.root).code == 0
    outputs = {r["id"]: r["response"]["output"] for r in data["results"]["results"]}
    found = imported(repo)
    assert set(found) == set(outputs)
    for lve_dir, line in found.values():
        test = json.loads((lve_dir / "test.json").read_text())
        assert test["tools"] == [tool["function"] for tool in target["config"]["tools"]]
        assert test["max_tool_steps"] == 0  # promptfoo answered no call, so neither does the LVE
        [step] = line["response"]["steps"]
        output = outputs[line["run_info"]["result"]]
        sent = output if isinstance(output, list) else output["tool_calls"]
        assert [(c["name"], c["arguments"]) for c in step["tool_calls"]] == [
            (call["function"]["name"], call["function"]["arguments"]) for call in sent
        ]
        assert step["content"] == (None if isinstance(output, list) else output["content"])
        shown = cli("show", str(lve_dir), cwd=repo.root)
        assert "tool steps: at most 0 per turn: calls are recorded, never answered" in shown.out
        assert "calls delete_files(" in shown.out
        validated = cli("validate", str(lve_dir), "--format", "json", cwd=repo.root).json()
        messages = [e["message"] for lve in validated["lves"] for e in lve["errors"]]
        assert all("placeholder" in message for message in messages), messages  # the grader's rubric only
    assert {type(output).__name__ for output in outputs.values()} == {"list", "dict"}  # both forms recorded
