from __future__ import annotations

import json
from pathlib import Path

import click

from lvegit.base.errors import EXIT_OK, UsageError
from lvegit.base.output import count, note
from lvegit.commands.catalog import short_help
from lvegit.commands.options import open_repository, repo_option
from lvegit.lve.repo import repository_url
from lvegit.publish.export import FORMATS, load_attempts


@click.command("export", short_help=short_help("export"))
@click.argument(
    "reports", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
@click.option(
    "--format", "export_format", type=click.Choice(FORMATS), required=True, help="The format to write."
)
@click.option(
    "--output", "-o", type=click.Path(dir_okay=False, path_type=Path), help="Write here instead of to stdout."
)
@repo_option
def export_command(
    reports: tuple[Path, ...], export_format: str, output: Path | None, repo_path: Path | None
) -> int:
    """Write run or replay reports (lvegit run --report, lvegit replay --report) in another tool's format.

    \b
    junit  JUnit XML for CI dashboards: a test suite per LVE, a test case per attempt; a verdict that
           differs from the recorded one fails, a failed attempt is an error, an unjudged one is skipped.
    avid   AVID reports (one JSON object a line), one per LVE with unsafe attempts: the model, the
           LVE's description, the unsafe share and the live reproduction rate with its 95% interval.
    garak  garak's report JSONL (setup, init, attempt, eval and completion entries), each LVE a probe
           and its checker the detector, for garak's analysis tools.

    The LVEs' descriptions and checkers come from the repository (--repo). Nothing is re-run.

    \b
    Examples:
      lvegit export --format junit run.jsonl --output lvegit-junit.xml
      lvegit export --format avid run.jsonl
      lvegit export --format garak run.jsonl --output lvegit.report.jsonl
    """
    repo = open_repository(repo_path)
    attempts = load_attempts(list(reports))
    try:
        if export_format == "junit":
            from lvegit.publish.export.junit import junit_xml

            text = junit_xml(attempts)
        elif export_format == "avid":
            from lvegit.publish.export.avid import avid_reports

            found = avid_reports(attempts, repo, repository_url(repo))
            text = "".join(json.dumps(report) + "\n" for report in found)
        else:
            from lvegit.publish.export.garak import garak_report

            text = "".join(json.dumps(entry) + "\n" for entry in garak_report(attempts, repo))
    except ImportError as exc:
        raise UsageError(f"--format {export_format} needs {exc.name}: pip install 'lvegit[export]'") from None
    if output is None:
        click.echo(text, nl=False)
    else:
        output.write_text(text, encoding="utf-8")
        note(f"{count(len(attempts), 'attempt')} written to {output} as {export_format}")
    return EXIT_OK
