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

PATHS_PER_CALL = 500  # pathspecs per git call


def published_before(repo: Repository, lve_dirs: list[Path]) -> dict[Path, str]:
    """The withheld folders among `lve_dirs` whose test.json was ever in git history (one git call for
    all of them), with the last commit that had it: their payload is public there for good, so
    withholding them hides nothing and takes the LVE from its author."""
    from lvegit.git.vcs import GitCheckout

    if not lve_dirs:
        return {}
    try:
        checkout = GitCheckout(repo.root)
    except UsageError:
        return {}  # not in git: nothing was published
    by_path = {checkout.relative(lve_dir / TEST_FILE): lve_dir for lve_dir in lve_dirs}
    found: dict[Path, str] = {}
    paths = sorted(by_path)
    for start in range(0, len(paths), PATHS_PER_CALL):
        chunk = paths[start : start + PATHS_PER_CALL]
        listed = checkout.ask("log", "--format=commit %H", "--name-only", "HEAD", "--", *chunk) or ""
        commit = ""
        for entry in listed.splitlines():
            if entry.startswith("commit "):
                commit = entry.removeprefix("commit ")
            elif entry in by_path:
                found.setdefault(by_path[entry], commit)  # newest first: the last commit that had it
    return found


def withheld_report(repo: Repository, lve_dir: Path, published: dict[Path, str] | None = None) -> LVEReport:
    """A withheld LVE's findings without any key; `published`: published_before's answer, where the caller
    asked it for many LVEs at once."""
    _abstract, problems = validate_withheld(repo, lve_dir)
    commit = (published if published is not None else published_before(repo, [lve_dir])).get(lve_dir)
    if commit is not None:
        problems.error(
            "",
            f"this folder held a clear {TEST_FILE} in git history (commit {commit[:12]}): a published "
            "LVE cannot be withheld (its payload stays public in history); report a new one",
        )
    report = LVEReport(repo.relative(lve_dir))
    for problem in problems.items:
        (report.errors if problem.severity == "error" else report.warnings).append(problem)
    return report


def withheld_check(repo: Repository, lve_dir: Path, published: dict[Path, str] | None = None) -> LVECheck:
    """The check of a withheld LVE where no identity opens it: validation, and a skipped replay."""
    from lvegit.disclosure.abstract import read_abstract
    from lvegit.lve.problems import Problems

    report = withheld_report(repo, lve_dir, published)
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
