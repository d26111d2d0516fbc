"""The terminal lines of validation findings and replay results, shared by validate, replay and check."""

from __future__ import annotations

from lvegit.base.output import count
from lvegit.judge.results import LVEReport, ReplayResult, invalid_verdicts, replay_counts, summarize
from lvegit.lve.problems import alike, location, placed


def validation_status(report: LVEReport) -> str:
    return "ok" if report.valid else f"invalid ({count(len(report.errors), 'error')})"


def finding_lines(report: LVEReport) -> list[str]:
    """A line per finding; findings that differ only in their line share one."""
    return [
        f"  {problem.severity}: {placed(problem, lines)}: {problem.what}"
        for problem, lines in alike([*report.errors, *report.warnings])
    ]


def replay_status(results: list[ReplayResult], valid: bool = True) -> str:
    """What the instances came to; an invalid LVE none of whose instances could be replayed says so
    (validation's findings say why)."""
    if not results:
        return "no instances" if valid else "not replayed"
    return replay_counts(summarize(results)) + invalid_verdicts(results)


def replay_lines(results: list[ReplayResult]) -> list[str]:
    """A line for each instance that did not reproduce; an LVE's instances skipped or failed for one
    reason share a line with their count."""
    lines = []
    for group in _grouped(results):
        result = group[0]
        if len(group) > 1:
            lines.append(f"  {result.status}: {count(len(group), 'instance')}: {result.reason}")
            continue
        where = location(result.file, result.line)
        reason = result.reason
        if result.status == "mismatch":
            detail = f"recorded passed={result.recorded}, replayed passed={result.replayed}"
            reason = f"{detail} ({result.reason})" if result.reason else detail
        lines.append(f"  {result.status}: {where}: {reason}")
    return lines


def _grouped(results: list[ReplayResult]) -> list[list[ReplayResult]]:
    """The results worth a line: each on its own, except that an LVE's instances skipped or failed for
    the same reason (a checker model that is not available, a checker that raises) form one group."""
    groups: list[list[ReplayResult]] = []
    alike: dict[tuple[str, str, str | None], list[ReplayResult]] = {}
    for result in results:
        if result.status == "reproduced":
            continue
        if result.status == "mismatch":
            groups.append([result])
        elif (key := (result.lve, result.status, result.reason)) in alike:
            alike[key].append(result)
        else:
            groups.append(alike.setdefault(key, [result]))
    return groups
