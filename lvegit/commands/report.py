from __future__ import annotations

from pathlib import Path

import click

from lvegit.attempt import load_report
from lvegit.commands.catalog import short_help
from lvegit.commands.run import show_results
from lvegit.options import format_option


@click.command("report", short_help=short_help("report"))
@click.argument(
    "reports", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
@format_option
def report_command(reports: tuple[Path, ...], output_format: str) -> int:
    """Summarise one or more `run --report` files, e.g. the reports of a sharded run, as one.

    Each attempt counts in its latest state (a resumed run's finished attempts replace their started ones),
    and the output is the one `lvegit run` prints. Exit code 1 when a verdict differs or an attempt failed.

    \b
    Examples:
      lvegit report run.jsonl
      lvegit report shard-1.jsonl shard-2.jsonl shard-3.jsonl shard-4.jsonl --format json
    """
    attempts = {}
    for path in reports:
        attempts.update(load_report(path))
    return show_results(list(attempts.values()), [], output_format)
