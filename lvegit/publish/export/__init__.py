"""`lvegit export`: run and replay reports (attempt records) in the formats of other tools: JUnit XML for CI
dashboards (junit.py), AVID reports (avid.py), garak's report JSONL (garak.py) and SARIF for code scanning
(sarif.py), each from the attempts only (nothing is re-run); and the repository itself as a dataset
(dataset.py) and as OSV advisories from its run history (osv.py)."""

from __future__ import annotations

from pathlib import Path

from lvegit.lve.repo import Repository
from lvegit.lve.spec import LVE, load_lve
from lvegit.run.attempt import Attempt, load_report

FORMATS = ("junit", "avid", "garak", "sarif", "dataset", "osv")


def load_attempts(paths: list[Path]) -> list[Attempt]:
    """The finished attempts of the reports (each in its latest state), in LVE, instance and run order."""
    attempts: dict[str, Attempt] = {}
    for path in paths:
        attempts.update(load_report(path).attempts)
    finished = [a for a in attempts.values() if a.status in ("complete", "error", "skipped")]
    return sorted(
        finished, key=lambda a: (a.lve, a.source_file or "", a.source_line or 0, a.repetition, a.id)
    )


def by_lve(attempts: list[Attempt]) -> dict[str, list[Attempt]]:
    grouped: dict[str, list[Attempt]] = {}
    for attempt in attempts:
        grouped.setdefault(attempt.lve, []).append(attempt)
    return grouped


def instance_name(attempt: Attempt) -> str:
    """`i.jsonl:3` (and the run, when the instance was run more than once): a test case's name."""
    name = f"{(attempt.source_file or 'new').rsplit('/', 1)[-1]}:{attempt.source_line or 0}"
    return name + (f" run {attempt.repetition + 1}" if attempt.repetition else "")


def lve_at(repo: Repository, path: str) -> LVE | None:
    """The LVE a report names, from the repository; None when it is not there (any more) or does not load."""
    return load_lve(repo, repo.root / path)[0] if (repo.root / path).is_dir() else None
