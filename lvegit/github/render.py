"""Markdown for the PR comment and the job summary, workflow-command annotations, and step outputs.

Everything taken from the results (paths, messages, responses) is escaped for markdown or placed in a code
block that cannot be closed early; secrets are masked by the escaping functions.
"""

from __future__ import annotations

import itertools
import secrets
from pathlib import Path
from urllib.parse import quote

from lvegit.base.escape import code_block, html_text, markdown, workflow_data, workflow_property
from lvegit.base.output import count
from lvegit.github.results import LVERecord, ResultsDocument
from lvegit.history.status import STATE_MARKS
from lvegit.judge.results import (
    FORMS,
    STATUSES,
    AddedInstance,
    LVEChange,
    ReplayResult,
    unsafe_rate,
    verdict_word,
)
from lvegit.lve.problems import Problem, alike, line_ranges, location, placed
from lvegit.lve.prompt import response_text
from lvegit.run.records import LiveRecord

MARKER = "<!-- lvegit:verdict-summary -->"
COMMENT_LIMIT = 65_536
SUMMARY_LIMIT = 1_000_000
MAX_ANNOTATIONS = 10  # GitHub shows at most 10 annotations of a kind per step
Finding = tuple[str, int | None, str]  # an annotation's file, line and message
MAX_RESPONSE_CHARS = 2_000
MAX_PROMPT_CHARS = 1_500


def _link(path: str, results: ResultsDocument, server_url: str) -> str:
    url = f"{server_url}/{quote(results.repository)}/blob/{quote(results.head_sha)}/{quote(path)}"
    return f"[{markdown(path)}]({url})"


def _named(lve: LVERecord) -> str:
    """`LVE-2026-0042 ` before its path, once it has an id (the id's form is checked where it is read)."""
    return f"`{lve.id}` " if lve.id else ""


def _validation(lve: LVERecord) -> str:
    if lve.valid:
        return "✅ valid" + (f" ({count(len(lve.warnings), 'warning')})" if lve.warnings else "")
    return f"❌ {count(len(lve.errors), 'error')}"


def _replay(lve: LVERecord) -> str:
    counts = lve.replay
    parts = [count(getattr(counts, s), *FORMS[s]) for s in STATUSES if getattr(counts, s)]
    icon = "❌ " if counts.mismatch or counts.error else ""
    return icon + (", ".join(parts) if parts else "no instances" if lve.valid else "not replayed")


def _live(lve: LVERecord, enabled: bool) -> str:
    if not enabled:
        return "—"
    if not lve.live:
        return "no instances"
    unsafe = sum(item.unsafe for item in lve.live)
    runs = sum(item.runs for item in lve.live)
    disagree = sum(item.agree is False for item in lve.live)
    errors = sum(bool(item.errors) for item in lve.live)
    text = f"{unsafe}/{runs} unsafe"
    if disagree:
        text += f", ❌ {disagree} differ"
    if errors:
        text += f", ❌ {errors} failed"
    return text


def _instance_counts(change: LVEChange) -> list[str]:
    counts = [f"{count(change.instances_added, 'instance')} added"] if change.instances_added else []
    return counts + (
        [f"{count(change.instances_removed, 'instance')} removed"] if change.instances_removed else []
    )


def _change(change: LVEChange | None) -> str:
    """The table's short account of what the pull request did to an LVE."""
    if change is None:
        return "—"
    if change.status == "added":
        return f"new LVE, {count(change.instances_added, 'instance')}"
    parts = [f"renamed from {markdown(change.renamed_from or '')}"] if change.status == "renamed" else []
    parts += _instance_counts(change)
    parts += [markdown(what) for what in change.changed]
    return "; ".join(parts) or "no content change"


def _replayed_cell(item: ReplayResult | None) -> str:
    if item is None:
        return "—"
    if item.status == "reproduced":
        return "✅ reproduced" if item.reason is None else markdown(item.reason)  # CLAIMED: no judge asked
    if item.status == "mismatch":
        return f"❌ mismatch: now {verdict_word(item.replayed)}"
    icon = "❌ " if item.status == "error" else ""
    return f"{icon}{item.status}" + (f": {markdown(item.reason)}" if item.reason else "")


def _live_cell(item: LiveRecord | None) -> str:
    if item is None:
        return "—"
    if item.errors and not item.runs:
        return f"❌ failed: {markdown(item.errors[0])}"
    text = unsafe_rate(item.unsafe, item.runs, item.interval_95 if item.runs > 1 else None)
    if item.agree is False:
        text = "❌ " + text
    return text + (f", ❌ {len(item.errors)} failed" if item.errors else "")


def _evidence(added: AddedInstance) -> str:
    """An added instance's filled prompt and stored response (and what its judge said), collapsed."""
    where = f"{added.file}:{added.line}"
    claim = "What the judge said, as the contributor recorded it (a claim)"
    judged = f"{claim}:\n\n{code_block(added.judged, MAX_RESPONSE_CHARS)}\n\n" if added.judged else ""
    return (
        f"<details><summary>{html_text(where)}: prompt and response</summary>\n\n"
        f"Prompt:\n\n{code_block(added.prompt, MAX_PROMPT_CHARS)}\n\n"
        f"Response:\n\n{code_block(added.response, MAX_RESPONSE_CHARS)}\n\n{judged}</details>"
    )


def _review(lve: LVERecord, evidence: bool) -> list[str]:
    """What the pull request changed in `lve` and how each added instance fares; with `evidence`, the
    prompts and responses of the added instances too."""
    change = lve.change
    if change is None:
        return []
    lines = []
    if change.status == "renamed":
        lines.append(f"Renamed from {markdown(change.renamed_from or '')}.")
    if change.changed:
        lines.append("Changed: " + "; ".join(markdown(what) for what in change.changed) + ".")
    if change.instances_added or change.instances_removed:
        lines.append("Instances: " + ", ".join(_instance_counts(change)) + ".")
    replayed = {(item.file, item.line): item for item in lve.replayed}
    live = {(item.file, item.line): item for item in lve.live}
    if change.added:
        lines += ["", "| Added instance | Recorded | Replayed | Live re-run |", "|---|---|---|---|"]
        for added in change.added:
            key = (added.file, added.line)
            name = added.file.rsplit("/", 1)[-1]
            lines.append(
                f"| {markdown(f'{name}:{added.line}')} | {verdict_word(added.passed)} | "
                f"{_replayed_cell(replayed.get(key))} | {_live_cell(live.get(key))} |"
            )
        lines.append("")
    added_keys = {(added.file, added.line) for added in change.added}
    unchanged = [item for item in lve.replayed if (item.file, item.line) not in added_keys]
    if change.instances_unchanged:
        counts = [
            f"{sum(item.status == status for item in unchanged)} {status}"
            for status in STATUSES
            if any(item.status == status for item in unchanged)
        ]
        unchanged_count = count(change.instances_unchanged, "unchanged instance")
        lines.append(f"{unchanged_count}: {', '.join(counts) or 'not replayed'}.")
    if evidence and change.added:
        lines += ["", *[_evidence(added) for added in change.added]]
    return lines


def _history(lve: LVERecord) -> list[str]:
    """The LVE's status on each model of the run history (lvegit status)."""
    if not lve.history:
        return []
    lines = ["", "| Run history: model | Status | Now |", "|---|---|---|"]
    for status in lve.history:
        now = ""
        if status.current is not None:
            rate = status.current
            now = f"{rate.unsafe}/{rate.attempts} unsafe on {markdown(rate.version)}"
        lines.append(
            f"| {markdown(status.model)} | {STATE_MARKS[status.state]} {markdown(status.summary)} | {now} |"
        )
    if lve.severity:
        lines += ["", f"Severity: {markdown(lve.severity)}"]
    return [*lines, ""]


def _mismatch_reason(item: ReplayResult) -> str:
    return item.reason or f"recorded passed={item.recorded}, replayed passed={item.replayed}"


def _findings(lve: LVERecord) -> str:
    """Why the LVE fails (or warns): its findings, replay and live results that did not hold."""
    lines = []
    for problem, found in alike(lve.errors + lve.warnings):
        where = placed(problem, found)
        lines.append(f"- {markdown(where)}: {markdown(problem.field)} {markdown(problem.message)}")
    for item in lve.replayed:
        if item.status != "reproduced":
            where = location(item.file, item.line)
            lines.append(f"- replay {item.status}: {markdown(where)}: {markdown(_mismatch_reason(item))}")
    for live in lve.live:
        if live.agree is False or live.errors:
            where = f"{live.file}:{live.line}"
            lines.append(
                f"- live: {markdown(where)}: recorded passed={live.recorded}, "
                f"{unsafe_rate(live.unsafe, live.runs, live.interval_95)}"
                + "".join(f"; error: {markdown(e)}" for e in live.errors)
            )
    return "\n".join(lines)


def _appended(lve: LVERecord) -> str:
    """The instances a live re-run appended, with their stored responses."""
    lines = []
    for appended in lve.appended:
        text = response_text(appended.response)
        lines.append(
            f"- appended to {markdown(appended.file)} (passed={appended.passed}):\n\n"
            f"{code_block(text, MAX_RESPONSE_CHARS)}\n"
        )
    return "\n".join(lines)


_LEFT_OUT_EVIDENCE = (
    "\n\n> ⚠️ Prompts and responses of added instances are left out to fit; they are in the job summary and "
    "the results file."
)


def _failing(lve: LVERecord) -> bool:
    return (
        not lve.valid
        or lve.replay.mismatch > 0
        or lve.replay.error > 0
        or any(item.agree is False or item.errors for item in lve.live)
    )


def _section(lve: LVERecord, evidence: bool) -> str:
    """One LVE's section under the table: why it fails first, then what changed and its added
    instances, then (collapsed) what a live re-run appended."""
    review = _review(lve, evidence) + _history(lve)
    if lve.readme:
        review += ["", f"⚠️ {markdown(lve.readme)}"]
    findings, appended = _findings(lve), _appended(lve)
    if not review and not findings and not appended:
        return ""
    parts = [f"#### {'❌' if _failing(lve) else '✅'} {_named(lve)}{markdown(lve.path)}", ""]
    parts += [findings, "", *review] if findings else review
    if appended:
        parts += ["", f"<details><summary>Appended instances</summary>\n\n{appended}\n\n</details>"]
    return "\n".join(parts).replace("\n\n\n", "\n\n").rstrip("\n")


def render(
    results: ResultsDocument,
    server_url: str = "https://github.com",
    limit: int = COMMENT_LIMIT,
    marker: bool = True,
) -> str:
    """The verdict summary; details are left out from the end, with a note, to stay under `limit`."""
    totals = results.totals
    headline = (
        "✅ lvegit: all checks passed"
        if results.passed
        else "❌ lvegit: " + "; ".join(markdown(f) for f in results.failures)
    )
    head = [MARKER] if marker else []
    head += [
        f"## {headline}",
        "",
        f"<sub>head `{results.head_sha[:12]}`"
        + (f" · base `{results.base_sha[:12]}`" if results.base_sha else "")
        + f" · {count(totals.changed, 'changed LVE')} · lvegit {markdown(results.lvegit)}</sub>",
        "",
    ]
    if not results.live.enabled:
        head += [f"Live re-run: off ({markdown(results.live.reason)}).", ""]
    if results.history:
        head += [f"⚠️ The run history could not be read: {markdown(results.history)}", ""]
    head += [line for note in results.trust for line in (markdown(note), "")]
    reviewed = any(lve.change is not None for lve in results.lves) or bool(results.removed)
    rows = [
        "| LVE |" + (" Change |" if reviewed else "") + " Validation | Replay | Live re-run | Appended |",
        "|---|" + ("---|" if reviewed else "") + "---|---|---|---|",
    ]
    ordered = sorted(results.lves, key=lambda lve: not _failing(lve))  # failures first
    for lve in ordered:
        rows.append(
            f"| {_named(lve)}{_link(lve.path, results, server_url)} |"
            + (f" {_change(lve.change)} |" if reviewed else "")
            + f" {_validation(lve)} | {_replay(lve)} | {_live(lve, results.live.enabled)} |"
            + f" {len(lve.appended)} |"
        )
    rows += [f"| {markdown(path)} | removed | — | — | — | — |" for path in results.removed]
    text = "\n".join(head + rows)
    # Detail goes before verdicts: first the prompts and responses, then whole sections from the end.
    for evidence in (True, False):
        sections = [_section(lve, evidence) for lve in ordered]
        sections = [section for section in sections if section]
        full = "\n\n".join([text, *sections])
        if len(full) <= limit:
            return full if evidence else full + _LEFT_OUT_EVIDENCE
    note = "\n\n> ⚠️ Truncated to fit: {} more LVE sections are in the job summary and the results file."
    for index, section in enumerate(sections):
        candidate = text + "\n\n" + section
        if len(candidate) + len(note) + len(_LEFT_OUT_EVIDENCE) + 10 > limit:
            return text + _LEFT_OUT_EVIDENCE + note.format(len(sections) - index)
        text = candidate
    if len(text) > limit:  # even the table is too long: cut it
        cut = text[: limit - 200].rsplit("\n", 1)[0]
        return cut + "\n\n> ⚠️ Truncated to fit: the table goes on in the job summary and the results file."
    return text


def annotation_commands(results: ResultsDocument, prefix: str, fail_on: tuple[str, ...]) -> list[str]:
    """Workflow commands for the findings that have a file: errors first, at most 10 of each kind, spread
    over the LVEs (each LVE's first finding before any LVE's second). A finding of a kind that `fail_on`
    does not fail the check for (all of them with fail-on: none) is a warning, not an error."""
    errors_by_lve: list[list[Finding]] = []
    warnings_by_lve: list[list[Finding]] = []
    for lve in results.lves:
        errors: list[Finding] = []
        warnings = [_annotated(p, lines) for p, lines in alike(lve.warnings)]
        kinds = [("invalid", _annotated(p, lines)) for p, lines in alike(lve.errors)]
        kinds += [
            (item.status, (item.file, item.line, f"replay {item.status}: {_mismatch_reason(item)}"))
            for item in lve.replayed
            if item.status in ("mismatch", "error")
        ]
        for kind, finding in kinds:
            (errors if kind in fail_on else warnings).append(finding)
        if lve.readme:
            warnings.append((f"{lve.path}/README.md", None, lve.readme))
        errors_by_lve.append(errors)
        warnings_by_lve.append(warnings)
    errors, warnings = _round_robin(errors_by_lve), _round_robin(warnings_by_lve)
    commands = []
    for kind, found in (("error", errors), ("warning", warnings)):
        for file, line, message in found[:MAX_ANNOTATIONS]:
            location = f"file={workflow_property(prefix + file)}" + (
                f",line={line}" if line is not None else ""
            )
            commands.append(f"::{kind} {location},title=lvegit::{workflow_data(message)}")
        if len(found) > MAX_ANNOTATIONS:
            commands.append(f"::notice::{len(found) - MAX_ANNOTATIONS} more {kind}s: see the job summary")
    return commands


def _annotated(problem: Problem, lines: list[int]) -> Finding:
    """One annotation for a finding, at its first line, saying the others where alike ones share it."""
    also = f" ({len(lines)} lines: {line_ranges(lines)})" if len(lines) > 1 else ""
    return problem.file, problem.line, f"{problem.what}{also}"


def _round_robin(per_lve: list[list[Finding]]) -> list[Finding]:
    """The first item of every list, then the second of every list, and so on."""
    return [item for turn in itertools.zip_longest(*per_lve) for item in turn if item is not None]


def write_outputs(path: Path, outputs: dict[str, str]) -> None:
    """Step outputs in the multi-line form, with a delimiter no value can contain."""
    with path.open("a", encoding="utf-8") as handle:
        for name, value in outputs.items():
            delimiter = f"lvegit_{secrets.token_hex(16)}"
            handle.write(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
