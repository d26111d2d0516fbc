"""Markdown for the PR comment and the job summary, workflow-command annotations, and step outputs.

Everything taken from the results (paths, messages, responses) is escaped for markdown or placed in a code
block that cannot be closed early; secrets are masked by the escaping functions.
"""

from __future__ import annotations

import functools
import itertools
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import quote

from lvegit.base.escape import code_block, code_span, html_text, markdown, workflow_data, workflow_property
from lvegit.base.output import count
from lvegit.github.results import LVERecord, ResultsDocument
from lvegit.history.status import STATE_MARKS
from lvegit.judge.records import ReplayCounts
from lvegit.judge.results import (
    STATUSES,
    LVEChange,
    ReplayResult,
    invalid_verdicts,
    replay_counts,
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


def _replay_counts(counts: ReplayCounts, results: list[ReplayResult]) -> str:
    """`2 reproduced, 1 skipped (1 of them invalid)`, as `lvegit replay` says it."""
    return replay_counts(counts.model_dump()) + invalid_verdicts(results)


def _instance_counts(change: LVEChange) -> list[str]:
    counts = [f"{count(change.instances_added, 'instance')} added"] if change.instances_added else []
    return counts + (
        [f"{count(change.instances_removed, 'instance')} removed"] if change.instances_removed else []
    )


def _unchanged_counts(lve: LVERecord) -> list[str]:
    """How the instances the pull request left alone replayed: `2 reproduced`, ..."""
    added = {(item.file, item.line) for item in lve.change.added} if lve.change else set()
    statuses = [item.status for item in lve.replayed if (item.file, item.line) not in added]
    return [f"{statuses.count(status)} {status}" for status in STATUSES if status in statuses]


def _by_place(items: list[ReplayResult] | list[LiveRecord]) -> dict[tuple[str | None, int | None], Any]:
    return {(item.file, item.line): item for item in items}


def _mismatch_reason(item: ReplayResult) -> str:
    return item.reason or f"recorded passed={item.recorded}, replayed passed={item.replayed}"


def _blocks(blocks: list[str]) -> str:
    """The blocks that say something, a blank line between each two."""
    return "\n\n".join(block.strip("\n") for block in blocks if block.strip("\n"))


def _failing(lve: LVERecord) -> bool:
    return (
        not lve.valid
        or lve.replay.mismatch > 0
        or lve.replay.error > 0
        or any(item.agree is False or item.errors for item in lve.live)
    )


@functools.cache
def _comment() -> Any:
    """The macros of templates/comment.md, with escape's functions as its filters."""
    from lvegit.base.templates import environment

    made = environment(
        "lvegit.github",
        autoescape=False,  # markdown: each value is escaped by the filter the template applies
        filters={
            "md": markdown,
            "html": html_text,
            "code": code_block,
            "code_span": code_span,
            "count": count,
            "verdict": verdict_word,
            "mismatch_reason": _mismatch_reason,
            "response_text": response_text,
        },
    )
    made.globals.update(
        MARKER=MARKER,
        MAX_PROMPT_CHARS=MAX_PROMPT_CHARS,
        MAX_RESPONSE_CHARS=MAX_RESPONSE_CHARS,
        marks=STATE_MARKS,
        rate=unsafe_rate,
        alike=alike,
        placed=placed,
        location=location,
        blocks=_blocks,
        by_place=_by_place,
        failing=_failing,
        replay_counts=_replay_counts,
        instance_counts=_instance_counts,
        unchanged_counts=_unchanged_counts,
    )
    return made.get_template("comment.md").module


_LEFT_OUT_EVIDENCE = (
    "\n\n> ⚠️ Prompts and responses of added instances are left out to fit; they are in the job summary and "
    "the results file."
)


def render(
    results: ResultsDocument,
    server_url: str = "https://github.com",
    limit: int = COMMENT_LIMIT,
    marker: bool = True,
    doubts: list[str] | None = None,
) -> str:
    """The verdict summary; details are left out from the end, with a note, to stay under `limit`.
    `doubts`: why the comment stage cannot vouch for the results (lvegit.github.verify); with any, the
    first line says that the verdicts are the pull request's own run's, and no summary is green."""
    comment = _comment()
    reviewed = any(lve.change is not None for lve in results.lves) or bool(results.removed)
    ordered = sorted(results.lves, key=lambda lve: not _failing(lve))  # failures first
    blob = f"{server_url}/{quote(results.repository)}/blob/{quote(results.head_sha)}"
    text = str(
        comment.table(results, ordered, reviewed, marker, lambda path: f"{blob}/{quote(path)}", doubts or [])
    ).rstrip("\n")
    # Detail goes before verdicts: first the prompts and responses, then whole sections from the end.
    for evidence in (True, False):
        sections = [str(comment.section(lve, evidence)) for lve in ordered]
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
