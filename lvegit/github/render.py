"""Markdown for the PR comment and the job summary, workflow-command annotations, and step outputs.

Everything taken from the results (paths, messages, responses) is escaped for markdown or placed in a code
block that cannot be closed early; secrets are masked by the escaping functions.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from urllib.parse import quote

from lvegit.escape import code_block, html_text, markdown, workflow_data, workflow_property
from lvegit.github.results import LVERecord, ReplayedRecord, ResultsDocument
from lvegit.problems import location
from lvegit.results import STATUSES

MARKER = "<!-- lvegit:verdict-summary -->"
COMMENT_LIMIT = 65_536
SUMMARY_LIMIT = 1_000_000
MAX_ANNOTATIONS = 10  # GitHub shows at most 10 annotations of a kind per step
MAX_RESPONSE_CHARS = 2_000


def _link(path: str, results: ResultsDocument, server_url: str) -> str:
    url = f"{server_url}/{quote(results.repository)}/blob/{quote(results.head_sha)}/{quote(path)}"
    return f"[{markdown(path)}]({url})"


def _validation(lve: LVERecord) -> str:
    if lve.valid:
        return "✅ valid" + (f" ({len(lve.warnings)} warnings)" if lve.warnings else "")
    return f"❌ {len(lve.errors)} errors"


def _replay(lve: LVERecord) -> str:
    counts = lve.replay
    parts = [f"{getattr(counts, status)} {status}" for status in STATUSES if getattr(counts, status)]
    icon = "❌ " if counts.mismatch or counts.error else ""
    return icon + (", ".join(parts) if parts else "no instances")


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


def _mismatch_reason(item: ReplayedRecord) -> str:
    return item.reason or f"recorded passed={item.recorded}, replayed passed={item.replayed}"


def _details(lve: LVERecord) -> str:
    lines = []
    for problem in lve.errors + lve.warnings:
        where = location(problem.file, problem.line)
        lines.append(f"- {markdown(where)}: {markdown(problem.field)} {markdown(problem.message)}")
    for item in lve.replayed:
        if item.status != "reproduced":
            where = location(item.file, item.line)
            lines.append(f"- replay {item.status}: {markdown(where)}: {markdown(_mismatch_reason(item))}")
    for live in lve.live:
        if live.agree is False or live.errors:
            where = f"{live.file}:{live.line}"
            low, high = live.interval_95
            lines.append(
                f"- live: {markdown(where)}: recorded passed={live.recorded}, "
                f"{live.unsafe}/{live.runs} unsafe (95% CI {low:.0%}-{high:.0%})"
                + "".join(f"; error: {markdown(e)}" for e in live.errors)
            )
    for appended in lve.appended:
        response = appended.response
        text = response if isinstance(response, str) else json.dumps(response, indent=1)
        lines.append(
            f"- appended to {markdown(appended.file)} (passed={appended.passed}):\n\n"
            f"{code_block(text, MAX_RESPONSE_CHARS)}\n"
        )
    return "\n".join(lines)


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
        + f" · {totals.changed} changed LVEs · lvegit {markdown(results.lvegit)}</sub>",
        "",
    ]
    if not results.live.enabled:
        head += [f"Live re-run: off ({markdown(results.live.reason)}).", ""]
    rows = ["| LVE | Validation | Replay | Live re-run | Appended |", "|---|---|---|---|---|"]
    for lve in results.lves:
        rows.append(
            f"| {_link(lve.path, results, server_url)} | {_validation(lve)} | {_replay(lve)} | "
            f"{_live(lve, results.live.enabled)} | {len(lve.appended)} |"
        )
    if results.removed:
        rows += ["", "Removed: " + ", ".join(markdown(path) for path in results.removed)]
    details = []
    for lve in results.lves:
        body = _details(lve)
        if body:
            details.append(f"<details><summary>{html_text(lve.path)}</summary>\n\n{body}\n\n</details>")
    text = "\n".join(head + rows)
    note = "\n\n> ⚠️ Truncated to fit: {} more detail sections are in the job summary and the results file."
    for index, section in enumerate(details):
        candidate = text + "\n\n" + section
        if len(candidate) + len(note) + 10 > limit:
            return text + note.format(len(details) - index)
        text = candidate
    if len(text) > limit:  # even the table is too long: cut it
        cut = text[: limit - 200].rsplit("\n", 1)[0]
        return cut + "\n\n> ⚠️ Truncated to fit: the table goes on in the job summary and the results file."
    return text


def annotation_commands(results: ResultsDocument, prefix: str) -> list[str]:
    """Workflow commands for the findings that have a file: errors first, at most 10 of each kind."""
    errors, warnings = [], []
    for lve in results.lves:
        errors += [(p.file, p.line, f"{p.field}: {p.message}") for p in lve.errors]
        warnings += [(p.file, p.line, f"{p.field}: {p.message}") for p in lve.warnings]
        for item in lve.replayed:
            if item.status in ("mismatch", "error"):
                errors.append((item.file, item.line, f"replay {item.status}: {_mismatch_reason(item)}"))
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


def write_outputs(path: Path, outputs: dict[str, str]) -> None:
    """Step outputs in the multi-line form, with a delimiter no value can contain."""
    with path.open("a", encoding="utf-8") as handle:
        for name, value in outputs.items():
            delimiter = f"lvegit_{secrets.token_hex(16)}"
            handle.write(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
