from __future__ import annotations

from pathlib import Path

import click

from lvegit.base.errors import EXIT_FINDINGS
from lvegit.base.output import count, note
from lvegit.commands.catalog import short_help
from lvegit.commands.options import format_option
from lvegit.run.attempt import load_report
from lvegit.run.outcome import show_results
from lvegit.run.rerun import Outcomes


@click.command("report", short_help=short_help("report"))
@click.argument(
    "reports", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
@format_option
def report_command(reports: tuple[Path, ...], output_format: str) -> int:
    """Summarise one or more `run --report` files, e.g. the reports of a sharded run, as one.

    Each attempt counts in its latest state (a resumed run's finished attempts replace their started ones),
    and the output is the one `lvegit run` prints. A report of an interrupted run is incomplete: lvegit
    says how many attempts are unfinished and the command that continues the run. Exit code 1 when a
    verdict differs, an attempt failed or a report is incomplete; 2 for a file that is not a run report.

    \b
    Examples:
      lvegit report run.jsonl
      lvegit report shard-*.jsonl --format json
    """
    attempts = {}
    unfinished: list[tuple[Path, int, str | None]] = []
    carried_to = None  # the model of a scan (run --model): its exit codes are a scan's
    for path in reports:
        loaded = load_report(path)
        attempts.update(loaded.attempts)
        model = (loaded.settings or {}).get("model")
        carried_to = carried_to or (model if isinstance(model, str) else None)
        if loaded.unfinished:
            unfinished.append((path, len(loaded.unfinished), loaded.command))
    finished = [
        attempt for attempt in attempts.values() if attempt.status in ("complete", "error", "skipped")
    ]
    code = show_results(Outcomes.of(finished), [], output_format, carried_to=carried_to)
    for path, number, command in unfinished:
        how = f"continue with: {command}" if command else "continue it with lvegit run ... --resume"
        note(f"{path}: incomplete: {count(number, 'attempt')} unfinished; {how}")
    return EXIT_FINDINGS if unfinished else code
