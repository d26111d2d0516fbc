"""The terminal lines of validation findings and replay results, shared by validate, replay and check."""

from __future__ import annotations

from collections.abc import Sequence

from lvegit.output import count
from lvegit.problems import Problem, location
from lvegit.results import LVEReport, ReplayResult, summarize

FORMS = {
    "reproduced": ("reproduced", "reproduced"),
    "mismatch": ("mismatch", "mismatches"),
    "skipped": ("skipped", "skipped"),
    "error": ("error", "errors"),
}


def replay_counts(summary: dict[str, int], every: bool = False) -> str:
    """`3 reproduced, 1 mismatch`: the statuses that occur (all of them with `every`)."""
    return ", ".join(count(number, *FORMS[status]) for status, number in summary.items() if number or every)


def validation_status(report: LVEReport) -> str:
    return "ok" if report.valid else f"invalid ({count(len(report.errors), 'error')})"


def finding_lines(report: LVEReport) -> list[str]:
    return [f"  {problem.render()}" for problem in (*report.errors, *report.warnings)]


def replay_status(results: list[ReplayResult]) -> str:
    return replay_counts(summarize(results)) if results else "no instances"


def replay_lines(results: list[ReplayResult], findings: Sequence[Problem] = ()) -> list[str]:
    """A line for each instance that did not reproduce (instances skipped for one reason: one line),
    except errors that only repeat one of the validation `findings` already shown."""
    shown = {(p.file, reason) for p in findings for reason in (p.what, f"invalid LVE: {p.what}")}
    lines = []
    for group in _grouped([r for r in results if (r.file, r.reason) not in shown]):
        result = group[0]
        if len(group) > 1:
            lines.append(f"  skipped: {count(len(group), 'instance')}: {result.reason}")
            continue
        where = location(result.file, result.line)
        reason = result.reason
        if result.status == "mismatch":
            detail = f"recorded passed={result.recorded}, replayed passed={result.replayed}"
            reason = f"{detail} ({result.reason})" if result.reason else detail
        lines.append(f"  {result.status}: {where}: {reason}")
    return lines


def _grouped(results: list[ReplayResult]) -> list[list[ReplayResult]]:
    """The results worth a line: each on its own, except that an LVE's instances skipped for the same
    reason (a checker model that is not available, say) form one group."""
    groups: list[list[ReplayResult]] = []
    skipped: dict[tuple[str, str | None], list[ReplayResult]] = {}
    for result in results:
        if result.status == "reproduced":
            continue
        if result.status != "skipped":
            groups.append([result])
        elif (result.lve, result.reason) in skipped:
            skipped[(result.lve, result.reason)].append(result)
        else:
            groups.append(skipped.setdefault((result.lve, result.reason), [result]))
    return groups
