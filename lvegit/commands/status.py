from __future__ import annotations

import functools
from pathlib import Path

import click

from lvegit.base.escape import console
from lvegit.base.output import count, line, note, print_json, styled_line
from lvegit.commands.catalog import short_help
from lvegit.commands.options import (
    Selection,
    current_settings,
    history_option,
    lve_command_options,
    open_repository,
)
from lvegit.history.severity import Severity, impacts_of, severities
from lvegit.history.status import History, LVEStatus, state_counts, status_table
from lvegit.history.store import history_dir


@click.command("status", short_help=short_help("status"))
@lve_command_options(
    click.option(
        "--model",
        "models",
        multiple=True,
        help="Only this model (repeatable). Default: every model the history holds.",
    ),
    history_option,
)
def status_command(
    selection: Selection,
    models: tuple[str, ...],
    history_path: Path | None,
    output_format: str,
    repo_path: Path | None,
) -> int:
    """Show, for each LVE and model, what the run history says: reproduces, fixed in a model version,
    regressed, not affected, inconclusive, or never run; when it first and last reproduced; and its
    current unsafe rate with a 95% interval (the runs of the latest model version).

    An LVE counts as fixed when the attempts after its last reproduction put the upper 95% bound of its
    unsafe rate under 5% (73 attempts with none unsafe); a reproduction after that makes it regressed.
    Runs enter the history with `lvegit history add REPORT`; see docs/history.md.

    \b
    Examples:
      lvegit status
      lvegit status repository/security --model openai/gpt-4o-mini
      lvegit status --changed --format json
    """
    repo = open_repository(repo_path)
    folder = history_dir(repo.root, history_path, current_settings().history.directory)
    history = History.open(folder, partial=True)  # a broken run file is named; the others are shown
    lve_dirs = selection.resolve(repo)
    selected = [repo.relative(path) for path in lve_dirs]
    # every LVE: one pass over the whole history, then the selection; a few: only theirs are read
    whole = selection.all_lves or len(selected) > 1000
    found = history.status(None if whole else selected, list(models) or None)
    for problem in history.problems:  # after the query, which finds a corrupt page the checks did not read
        note(f"error: {problem}")
    shown_models = list(models) or sorted({model for _lve, model in found})
    statuses = status_table(selected, shown_models, found)
    if not history.files:
        note(f"no runs in {folder}: add one with lvegit history add REPORT (see lvegit history --help)")
    if output_format == "json":
        from lvegit.history.records import status_document

        # one line: a history of 10,000 LVEs on 20 models is 200,000 entries (jq . indents it)
        print_json(status_document(str(folder), len(history.files), shown_models, statuses), indent=None)
        return 1 if history.problems else 0
    judged = sorted({status.lve for status in statuses if status.state != "never-run"})
    _print(statuses, severities(statuses, impacts_of(repo, judged)))
    counted = state_counts(statuses).items()
    summary = ", ".join(f"{number} {state.replace('-', ' ')}" for state, number in counted)  # as cells say it
    scope = f"{count(len(selected), 'LVE')} x {count(len(shown_models), 'model')}"
    line(f"{scope} ({count(len(history.files), 'run')}): {summary or 'nothing'}")
    return 1 if history.problems else 0


def _print(statuses: list[LVEStatus], severity: dict[str, Severity]) -> None:
    """One block per LVE, a line per model and its severity from evidence once some run gave a verdict;
    written at once (200,000 lines are a few megabytes). Each text escaped once: the same models, versions
    and summaries recur on every LVE."""
    escaped = functools.cache(console)
    width = max((len(escaped(s.model)) for s in statuses), default=0)
    lines: list[str] = []
    previous = None
    for status in statuses:
        if status.lve != previous:
            _severity_line(lines, severity.get(previous or ""), width)
            lines.append(escaped(status.lve))
            previous = status.lve
        rate = ""
        if status.current is not None:
            low, high = status.current.interval_95
            rate = (
                f"  {status.current.unsafe}/{status.current.attempts} unsafe "
                f"[{low:.0%}, {high:.0%}] on {escaped(status.current.version)}"
            )
        if status.invalid:  # neither safe nor unsafe: outside the rate
            rate += f", {status.invalid} invalid"
        lines.append(f"  {escaped(status.model).ljust(width)}  {escaped(status.summary)}{rate}")
    _severity_line(lines, severity.get(previous or ""), width)
    if lines:
        styled_line("\n".join(lines))  # every part escaped above


def _severity_line(lines: list[str], severity: Severity | None, width: int) -> None:
    if severity is not None and severity.level != "unknown":
        lines.append(f"  {'severity'.ljust(width)}  {severity.summary}")
