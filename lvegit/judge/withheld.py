"""A withheld LVE's check without any key: its abstract and envelope validated (lvegit.disclosure), its
folder never a clear LVE in the history it was committed on, and its replay skipped, saying why."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from lvegit.base.errors import UsageError
from lvegit.disclosure.payload import PAYLOAD_FILE
from lvegit.disclosure.withheld import validate_withheld, withheld_note
from lvegit.judge.results import LVECheck, LVEReport, ReplayResult
from lvegit.lve.repo import TEST_FILE, WITHHELD_FILE, Repository


def _published_before(repo: Repository, lve_dir: Path) -> str | None:
    """The commit where the folder's test.json was last in git history, if it ever was: its payload is
    public there for good, so withholding it hides nothing and takes the LVE from its author."""
    from lvegit.git.vcs import GitCheckout

    try:
        checkout = GitCheckout(repo.root)
    except UsageError:
        return None  # not in git: nothing was published
    found = checkout.ask("log", "-1", "--format=%H", "HEAD", "--", checkout.relative(lve_dir / TEST_FILE))
    return found.strip() or None if found else None


def withheld_report(repo: Repository, lve_dir: Path) -> LVEReport:
    _abstract, problems = validate_withheld(repo, lve_dir)
    published = _published_before(repo, lve_dir)
    if published is not None:
        problems.error(
            "",
            f"this folder held a clear {TEST_FILE} in git history (commit {published[:12]}): a published "
            "LVE cannot be withheld (its payload stays public in history); report a new one",
        )
    report = LVEReport(repo.relative(lve_dir))
    for problem in problems.items:
        (report.errors if problem.severity == "error" else report.warnings).append(problem)
    return report


def withheld_check(repo: Repository, lve_dir: Path) -> LVECheck:
    """The check of a withheld LVE where no identity opens it: validation, and a skipped replay."""
    from lvegit.disclosure.abstract import read_abstract
    from lvegit.lve.problems import Problems

    report = withheld_report(repo, lve_dir)
    rel = report.path
    abstract = read_abstract(lve_dir, Problems(f"{rel}/{WITHHELD_FILE}"))
    reason = f"withheld LVE: {withheld_note(abstract)}; replayed only where a disclosure identity opens it"
    return LVECheck(
        report, [ReplayResult(rel, f"{rel}/{WITHHELD_FILE}", None, None, None, "skipped", reason)]
    )


WITHHELD_MESSAGE = "(not shown: the finding may quote the withheld payload)"


def redacted(check: LVECheck) -> LVECheck:
    """A withheld LVE's check as a public log may show it: statuses, counts, files, fields and lines, never
    a message or reason, which may quote the payload (a prompt, a response, a pattern)."""
    report = LVEReport(
        check.validation.path,
        [replace(p, message=WITHHELD_MESSAGE) for p in check.validation.errors],
        [replace(p, message=WITHHELD_MESSAGE) for p in check.validation.warnings],
    )
    return LVECheck(report, [replace(r, reason=None) for r in check.replay])


def unopened(repo: Repository, lve_dir: Path, why: str) -> LVECheck:
    """The check of a withheld LVE whose payload could not be opened or used: an error naming its file."""
    from lvegit.lve.problems import Problem

    rel = repo.relative(lve_dir)
    report = LVEReport(rel, [Problem("error", f"{rel}/{PAYLOAD_FILE}", "", why)])
    return LVECheck(report, [])
