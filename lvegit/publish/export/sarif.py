"""SARIF 2.1.0 for GitHub code scanning, from a run report: a result for each LVE that reproduced on a
model in the run, at its test.json, the LVE's id as the rule (its path before it has one), its taxonomy
tags and its severity from this run's evidence (history/severity.py) as `security-severity`.

An alert opens and closes with what the runs show: its fingerprint is the rule and the model, so the next
run's upload closes it when the LVE no longer reproduces. Only live attempts count (a replay judges
recorded answers again: it says nothing of the model today). GitHub's documented upload limits hold:
at most 25,000 results and rules a run (lvegit refuses more: select a slice with --tag or a folder), and
at most 20 tags a rule, of which it shows 10 (lvegit writes 10).
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

from lvegit._version import __version__
from lvegit.base.errors import UsageError
from lvegit.base.escape import mask
from lvegit.history.severity import ASSUMED, ModelEvidence, Severity, impact_of, severity
from lvegit.lve import ids
from lvegit.lve.repo import Repository, repository_url
from lvegit.lve.spec import LVE
from lvegit.lve.taxonomy import SCHEMES
from lvegit.publish.export import by_lve, lve_at
from lvegit.run.attempt import Attempt
from lvegit.run.rerun import wilson_interval

SCHEMA_URI: Final = "https://json.schemastore.org/sarif-2.1.0.json"
MAX_RESULTS: Final = 25_000  # GitHub refuses a run with more results, or more rules
SHOWN_TAGS: Final = 10  # GitHub accepts 20 tags a rule and shows 10
TOOL_URI: Final = "https://github.com/lvegit/lvegit"


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _evidence(model: str, attempts: list[Attempt]) -> tuple[ModelEvidence, int, int]:
    judged = [a for a in attempts if a.status == "complete" and a.verdict is not None]
    unsafe = [a for a in judged if a.verdict is False]
    finished = [a.finished_at for a in unsafe if a.finished_at is not None]
    last = _iso(max(finished)) if finished else None
    low = wilson_interval(len(unsafe), len(judged))[0]
    return ModelEvidence(model, bool(unsafe), False, low, last, last), len(unsafe), len(judged)


def _level(found: Severity) -> str:
    return "error" if found.score >= 7 else "warning" if found.score >= 4 else "note"


def _artifact_uri(repo: Repository, lve_rel: str) -> str:
    """test.json's path as code scanning shows it: from the current folder (the checkout of the scanning
    repository) when the LVE repository lies inside it, else from the LVE repository's root."""
    root = repo.root.resolve()
    here = Path.cwd().resolve()
    prefix = root.relative_to(here).as_posix() if root.is_relative_to(here) and root != here else ""
    return quote("/".join(part for part in (prefix, lve_rel, "test.json") if part))


def sarif_log(attempts: list[Attempt], repo: Repository) -> dict[str, Any]:
    """The SARIF log of the live attempts of a run report."""
    live = [a for a in attempts if a.backend != "replay"]
    if attempts and not live:
        raise UsageError("--format sarif reads run reports; this one is a replay (lvegit run --report)")
    registry = ids.live_ids(repo)
    source = repository_url(repo)
    rules: dict[str, dict[str, Any]] = {}
    results = []
    for lve_path, group in by_lve(live).items():
        lve = lve_at(repo, lve_path)
        rule_id = registry.get(lve_path, lve_path)
        by_model: dict[str, list[Attempt]] = {}
        for attempt in group:
            by_model.setdefault(attempt.model, []).append(attempt)
        for model, model_attempts in sorted(by_model.items()):
            evidence, unsafe, judged = _evidence(model, model_attempts)
            if not evidence.affected:
                continue
            found = severity([evidence], impact_of(lve.impact, lve.tags) if lve else ASSUMED)
            if rule_id not in rules:
                rules[rule_id] = _rule(rule_id, lve_path, lve, source)
            rules[rule_id]["properties"]["security-severity"] = str(
                max(found.score, float(rules[rule_id]["properties"].get("security-severity", 0)))
            )
            fingerprint = hashlib.sha256(f"{rule_id}\n{model}".encode()).hexdigest()
            results.append(
                {
                    "ruleId": rule_id,
                    "level": _level(found),
                    "message": {
                        "text": mask(
                            f"{rule_id} reproduces on {model}: {unsafe} of {judged} attempts unsafe "
                            f"(severity {found.summary})"
                        )
                    },
                    "locations": [
                        {
                            "physicalLocation": {
                                "artifactLocation": {"uri": _artifact_uri(repo, lve_path)},
                                "region": {"startLine": 1},
                            }
                        }
                    ],
                    "partialFingerprints": {"lvegitRuleModel/v1": fingerprint},
                    "properties": {
                        "model": model,
                        "versions": sorted({a.resolved_model for a in model_attempts if a.resolved_model}),
                        "unsafe": unsafe,
                        "attempts": judged,
                    },
                }
            )
    if len(results) > MAX_RESULTS:
        raise UsageError(
            f"{len(results):,} results: GitHub code scanning refuses more than {MAX_RESULTS:,} a run; "
            "export a slice of the corpus (run --tag, or a folder)"
        )
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "lvegit",
                        "version": __version__,
                        "informationUri": TOOL_URI,
                        "rules": list(rules.values()),
                    }
                },
                "results": results,
            }
        ],
    }


def _rule(rule_id: str, lve_path: str, lve: LVE | None, source: str | None) -> dict[str, Any]:
    text = mask(lve.description if lve else "") or lve_path
    taxonomy = [tag for tag in (lve.tags if lve else []) if tag.get("name") in SCHEMES]
    tags = ["security", "llm"] + [f"{tag['name']}:{tag.get('value')}" for tag in taxonomy]
    rule: dict[str, Any] = {
        "id": rule_id,
        "name": lve_path.rsplit("/", 2)[-2] if lve_path.count("/") >= 2 else lve_path,
        "shortDescription": {"text": text.splitlines()[0][:1000]},
        "fullDescription": {"text": text},
        "help": {"text": f"{lve_path}: {text}"},
        "properties": {"tags": tags[:SHOWN_TAGS]},
    }
    if source:
        rule["helpUri"] = f"{source.rstrip('/').removesuffix('.git')}/tree/main/{quote(lve_path)}"
    return rule
