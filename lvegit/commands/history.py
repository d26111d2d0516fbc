from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import click

from lvegit.base.escape import console
from lvegit.base.output import count, line, note, print_json
from lvegit.commands.catalog import short_help
from lvegit.commands.options import (
    SuggestingGroup,
    current_settings,
    format_option,
    history_option,
    open_repository,
    repo_option,
)
from lvegit.history.store import add_run, history_dir


@click.group("history", cls=SuggestingGroup, short_help=short_help("history"))
def history_command() -> None:
    """The run history: one Parquet file per run in history/ (LVEGIT_HISTORY_DIR moves it), which
    `lvegit status`, the site and the pull request comment read. Scheduled runs add theirs (see the
    workflow template examples/workflows/lvegit-scheduled.yml and docs/history.md).

    \b
    Examples:
      lvegit run --all --model openai/gpt-4o --repeat 3 --report week-48.jsonl
      lvegit history add week-48.jsonl
      lvegit history list
    """


def _parse_at(_context: click.Context, _param: click.Parameter, value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(
            f"give a date or time in ISO 8601 (2026-11-23 or 2026-11-23T03:17Z), not {value!r}"
        ) from None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


@history_command.command("add")
@click.argument(
    "reports", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
@click.option(
    "--at",
    "started",
    callback=_parse_at,
    help="When the run took place (ISO 8601, UTC unless it says otherwise); default: when its first "
    "attempt started. For reports of runs made before their history was kept.",
)
@history_option
@repo_option
def add_command(
    reports: tuple[Path, ...], started: datetime | None, history_path: Path | None, repo_path: Path | None
) -> int:
    """Add one run to the history: its report (lvegit run --report FILE), or the reports of its shards.

    The finished attempts (no prompts, no responses: the LVE, model and version, instance, and whether
    it was unsafe) become one file, named after the run's start and a hash of its attempts; the same run
    is never added twice.

    \b
    Examples:
      lvegit history add week-48.jsonl
      lvegit history add shard-1.jsonl shard-2.jsonl shard-3.jsonl shard-4.jsonl
      lvegit history add old-run.jsonl --at 2026-09-07
    """
    # With --history, no repository is needed: a workflow adds the run in a checkout of the history branch.
    folder = history_path or history_dir(
        open_repository(repo_path).root, None, current_settings().history.directory
    )
    added = add_run(folder, list(reports), started)
    models = ", ".join(console(model) for model in added.models)
    versions = ", ".join(console(version) for version in added.versions)
    invalid = f", {added.invalid} invalid" if added.invalid else ""  # verdicts that could not be judged
    attempts = f"{count(added.attempts, 'attempt')} ({added.failed} failed{invalid})"
    line(f"added {attempts} of {models} ({versions}) to {added.path}")
    return 0


@history_command.command("list")
@history_option
@repo_option
@format_option
def list_command(history_path: Path | None, repo_path: Path | None, output_format: str) -> int:
    """List the runs of the history, oldest first: file, start, attempts, models and versions. A history
    with no runs yet is said in a note (exit 0), as `lvegit status` says it.

    \b
    Examples:
      lvegit history list
      lvegit history list --format json
    """
    from lvegit.history.status import History

    repo = open_repository(repo_path)
    folder = history_dir(repo.root, history_path, current_settings().history.directory)
    history = History.open(folder)
    runs = history.runs() if history.files else []
    if not runs:
        note(f"no runs in {folder}: add one with lvegit history add REPORT")
    if output_format == "json":
        from lvegit.history.records import RunRow, history_document

        rows = [
            RunRow(file=run.file, at=run.at, attempts=run.attempts, versions=run.versions) for run in runs
        ]
        print_json(history_document(str(folder), rows))
        return 0
    for run in runs:
        versions = ", ".join(console(version) for version in run.versions)
        line(f"{run.file}  {run.at}  {count(run.attempts, 'attempt')}  {versions}")
    line(f"{count(len(runs), 'run')} in {folder}")
    return 0
