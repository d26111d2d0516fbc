"""SARIF 2.1.0 for GitHub code scanning, from a run report: a result for each LVE that reproduced on a
model in the run, the LVE's id as the rule (its path before it has one), its taxonomy tags, and its
severity (history/severity.py: the run history's evidence where present, this run's where the history has
none for a model) as `security-severity`, the rule's default level and each result's level.

A result is located where code scanning can show it, in the repository the workflow scans: a file there
that names the scanned model (`location`: at the first line that names it), or, when the LVE repository
scans itself, the LVE's test.json. An LVE repository checked out beside the scanned one is no place for
it (code scanning shows "Preview unavailable" and links nowhere): lvegit asks for `--location` then.

An alert opens and closes with what the runs show: its fingerprint is the rule and the model, so the next
run's upload closes it when the LVE no longer reproduces. Only live attempts count (a replay judges
recorded answers again: it says nothing of the model today). GitHub's documented upload limits hold:
at most 25,000 results and rules a run (lvegit refuses more: select a slice with --tag or a folder), and
at most 20 tags a rule, of which it shows 10 (lvegit writes 10).
"""

from __future__ import annotations

import hashlib
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

from lvegit._version import __version__
from lvegit.base.errors import UsageError
from lvegit.base.escape import code_block, mask, rendered_markdown
from lvegit.base.files import FileProblem, read_text
from lvegit.history.severity import ASSUMED, ModelEvidence, Severity, from_status, impact_of, severity
from lvegit.history.status import LVEStatus
from lvegit.lve import ids
from lvegit.lve.repo import Repository, model_folder, repository_url
from lvegit.lve.spec import LVE
from lvegit.lve.taxonomy import SCHEMES
from lvegit.publish.export import by_lve, lve_at
from lvegit.publish.export.osv import osv_id
from lvegit.run.attempt import Attempt
from lvegit.run.rerun import wilson_interval

SCHEMA_URI: Final = "https://json.schemastore.org/sarif-2.1.0.json"
MAX_RESULTS: Final = 25_000  # GitHub refuses a run with more results, or more rules
SHOWN_TAGS: Final = 10  # GitHub accepts 20 tags a rule and shows 10
TOOL_URI: Final = "https://github.com/lvegit/lvegit"
MAX_LOCATION_BYTES: Final = 1 << 20


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _evidence(model: str, attempts: list[Attempt]) -> tuple[ModelEvidence, int, int]:
    """This run's evidence on one model (errors count for nothing), its unsafe and its judged attempts."""
    judged = [a for a in attempts if a.status == "complete" and a.verdict is not None]
    unsafe = [a for a in judged if a.verdict is False]
    finished = [a.finished_at for a in judged if a.finished_at is not None]
    last_unsafe = [a.finished_at for a in unsafe if a.finished_at is not None]
    low = wilson_interval(len(unsafe), len(judged))[0]
    evidence = ModelEvidence(
        model,
        bool(unsafe),
        False,
        low,
        _iso(max(last_unsafe)) if last_unsafe else None,
        _iso(max(finished)) if finished else None,
        "reproduces" if unsafe else "inconclusive",
        concluded=bool(unsafe),
    )
    return evidence, len(unsafe), len(judged)


def _level(found: Severity) -> str:
    return "error" if found.score >= 7 else "warning" if found.score >= 4 else "note"


def git_root(path: Path) -> Path | None:
    """The working tree `path` lies in (the nearest folder above it with `.git`), or None."""
    for folder in (path, *path.parents):
        if (folder / ".git").exists():
            return folder
    return None


@dataclass(frozen=True)
class Placement:
    """Where results go, in the scanned repository (the one of the current folder): a given file, at the
    line that names each model, or each LVE's test.json when the LVE repository is the scanned one."""

    scanned: Path  # the scanned repository's root
    lve_root: Path | None  # the LVE repository's root from there, when it is the scanned one
    file: str | None = None  # the given file, from the scanned repository's root
    lines: tuple[str, ...] = ()

    @classmethod
    def of(cls, repo: Repository, location: Path | None) -> Placement:
        here = Path.cwd().resolve()
        scanned = git_root(here) or here
        if location is not None:
            path = (here / location).resolve()
            if not path.is_relative_to(scanned) or not path.is_file():
                raise UsageError(f"--location {location}: no file of the scanned repository ({scanned})")
            try:
                text = read_text(path, MAX_LOCATION_BYTES, within=scanned, base_name="the scanned repository")
            except FileProblem as exc:
                raise UsageError(f"--location {location}: {exc.message}") from None
            return cls(scanned, None, path.relative_to(scanned).as_posix(), tuple(text.splitlines()))
        root = repo.root.resolve()
        if git_root(root) != scanned and not (git_root(root) is None and root.is_relative_to(scanned)):
            raise UsageError(
                f"the LVE repository ({repo.root}) is not the repository this scan runs in ({scanned}): code "
                "scanning shows only files of the scanned repository. Give --location FILE, a file of it "
                "that names the scanned model (its configuration, or the workflow file)"
            )
        return cls(scanned, root)

    def physical(self, lve_path: str, model: str) -> dict[str, Any]:
        if self.file is not None:
            uri, line = self.file, self._line_naming(model)
        else:
            assert self.lve_root is not None
            uri = (self.lve_root / lve_path / "test.json").relative_to(self.scanned).as_posix()
            line = 1
        return {"artifactLocation": {"uri": quote(uri)}, "region": {"startLine": line}}

    def _line_naming(self, model: str) -> int:
        """The first line of the file that names the model (its id, or the name after the vendor), else 1."""
        for wanted in dict.fromkeys((model, model.rsplit("/", 1)[-1])):
            for number, text in enumerate(self.lines, 1):
                if wanted and wanted in text:
                    return number
        return 1


def lve_severities(
    live: Mapping[str, Mapping[str, ModelEvidence]],
    statuses: Mapping[tuple[str, str], LVEStatus],
    lves: Mapping[str, LVE | None],
) -> dict[str, Severity]:
    """Each LVE's severity: the history's evidence on every model it holds for the LVE, this run's on the
    models the history has nothing of."""
    found = {}
    for lve_path, by_model in live.items():
        history = {model: from_status(s) for (path, model), s in statuses.items() if path == lve_path}
        evidence = [*history.values(), *(e for model, e in by_model.items() if model not in history)]
        lve = lves.get(lve_path)
        found[lve_path] = severity(evidence, impact_of(lve.impact, lve.tags) if lve else ASSUMED)
    return found


def sarif_log(
    attempts: list[Attempt],
    repo: Repository,
    statuses: Mapping[tuple[str, str], LVEStatus] | None = None,
    location: Path | None = None,
) -> dict[str, Any]:
    """The SARIF log of the live attempts of a run report. `statuses`: the run history's, by (LVE, model),
    where the repository has one; `location`: the file of the scanned repository results are placed in."""
    live = [a for a in attempts if a.backend != "replay"]
    if attempts and not live:
        raise UsageError("--format sarif reads run reports; this one is a replay (lvegit run --report)")
    placement = Placement.of(repo, location)
    registry = ids.live_ids(repo)
    source = repository_url(repo)
    groups = by_lve(live)
    lves = {lve_path: lve_at(repo, lve_path) for lve_path in groups}
    counted: dict[str, dict[str, tuple[ModelEvidence, int, int, list[Attempt]]]] = {}
    for lve_path, group in groups.items():
        by_model: dict[str, list[Attempt]] = {}
        for attempt in group:
            by_model.setdefault(attempt.model, []).append(attempt)
        counted[lve_path] = {
            model: (*_evidence(model, model_attempts), model_attempts)
            for model, model_attempts in sorted(by_model.items())
        }
    history = {path: s for path, s in (statuses or {}).items() if path[0] in groups}
    severities = lve_severities(
        {path: {model: c[0] for model, c in models.items()} for path, models in counted.items()},
        history,
        lves,
    )
    rules: dict[str, dict[str, Any]] = {}
    results = []
    for lve_path, models in counted.items():
        rule_id = registry.get(lve_path, lve_path)
        found = severities[lve_path]
        for model, (evidence, unsafe, judged, model_attempts) in models.items():
            if not evidence.affected:
                continue
            if rule_id not in rules:
                rules[rule_id] = _rule(rule_id, lve_path, lves[lve_path], source, found)
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
                    "locations": [{"physicalLocation": placement.physical(lve_path, model)}],
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
    scanned = sorted({model_folder(a.model) for a in live})
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "lvegit",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": TOOL_URI,
                        "rules": list(rules.values()),
                    }
                },
                # code scanning's category: one per set of models scanned, so that scans of two models
                # keep their own alerts
                "automationDetails": {"id": f"lvegit/{'+'.join(scanned) or 'none'}/"},
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }


def _rule(
    rule_id: str, lve_path: str, lve: LVE | None, source: str | None, found: Severity
) -> dict[str, Any]:
    description = lve.description if lve else ""
    text = mask(description) or lve_path
    taxonomy = [tag for tag in (lve.tags if lve else []) if tag.get("name") in SCHEMES]
    tags = ["security", "llm"] + [f"{tag['name']}:{tag.get('value')}" for tag in taxonomy]
    page = f"{source.rstrip('/').removesuffix('.git')}/tree/main/{quote(lve_path)}" if source else None
    rule: dict[str, Any] = {
        "id": rule_id,
        "name": lve_path.rsplit("/", 2)[-2] if lve_path.count("/") >= 2 else lve_path,
        "shortDescription": {"text": text.splitlines()[0][:1000]},
        "fullDescription": {"text": text},
        "defaultConfiguration": {"level": _level(found)},
        "help": {
            "text": _help_text(lve_path, text, found, page),
            "markdown": _help_markdown(rule_id, lve_path, description, found, page),
        },
        "properties": {"tags": tags[:SHOWN_TAGS], "security-severity": f"{found.score:.1f}"},
    }
    if page:
        rule["helpUri"] = page
    return rule


def _reproduce(lve_path: str) -> str:
    return f"lvegit run {shlex.quote(lve_path)} --model MODEL"


def _help_text(lve_path: str, text: str, found: Severity, page: str | None) -> str:
    lines = [text, "", f"Severity: {found.summary}", f"Reproduce: {_reproduce(lve_path)}"]
    return "\n".join([*lines, *([f"Advisory: {page}"] if page else [])])


def _help_markdown(rule_id: str, lve_path: str, description: str, found: Severity, page: str | None) -> str:
    """The rule's help as code scanning shows it: what the LVE is, how severe, how to reproduce it, and
    where its advisory is. The description is the LVE's: it renders as its text, never as markup."""
    parts = [
        rendered_markdown(description or lve_path),
        "",
        f"**Severity**: {rendered_markdown(found.summary)}",
        "",
        "**How to reproduce**: with lvegit installed, in a clone of the LVE repository, against the model:",
        "",
        code_block(_reproduce(lve_path), language="shell"),
    ]
    if page:
        osv = f" (OSV record `{osv_id(rule_id)}`)" if rule_id.startswith("LVE-") else ""
        parts += ["", f"**Advisory**: [{rendered_markdown(lve_path)}]({page}){osv}"]
    return "\n".join(parts)
