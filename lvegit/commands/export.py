from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from lvegit.base.errors import EXIT_OK, UsageError
from lvegit.base.escape import console
from lvegit.base.extras import missing
from lvegit.base.output import (
    count,
    json_lines,
    line,
    note,
    print_document,
    print_json,
    print_json_lines,
)
from lvegit.commands.catalog import short_help
from lvegit.commands.options import current_settings, history_option, open_repository, repo_option
from lvegit.history.store import history_dir
from lvegit.lve.repo import Repository, repository_url
from lvegit.publish.export import FORMATS, load_attempts

if TYPE_CHECKING:
    from lvegit.history.status import LVEStatus
    from lvegit.run.attempt import Attempt


@click.command("export", short_help=short_help("export"))
@click.argument("reports", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--format", "export_format", type=click.Choice(FORMATS), required=True, help="The format to write."
)
@click.option(
    "--output",
    "-o",
    type=click.Path(path_type=Path),
    help="Write here instead of to stdout (for dataset: the folder, required; for osv: a folder).",
)
@click.option("--title", default="LVE repository", show_default=True, help="dataset: the card's title.")
@click.option(
    "--license",
    "license_id",
    default="other",
    show_default=True,
    help="dataset: the license the card declares, as the Hugging Face hub names it (cc-by-4.0, apache-2.0).",
)
@click.option("--with-history", is_flag=True, help="dataset: add the run history as the table `runs`.")
@click.option(
    "--location",
    type=click.Path(dir_okay=False, path_type=Path),
    help="sarif: the file of the scanned repository that alerts point at (one that names the scanned "
    "model); needed when the LVE repository is not the scanned one.",
)
@history_option
@repo_option
def export_command(
    reports: tuple[Path, ...],
    export_format: str,
    output: Path | None,
    title: str,
    license_id: str,
    with_history: bool,
    location: Path | None,
    history_path: Path | None,
    repo_path: Path | None,
) -> int:
    """Write run or replay reports (lvegit run --report, lvegit replay --report) in another tool's format,
    or the repository as a dataset.

    \b
    junit  JUnit XML for CI dashboards: a test suite per LVE, a test case per attempt; a verdict that
           differs from the recorded one fails, a failed attempt is an error, an unjudged one is skipped.
    avid   AVID reports (one JSON object a line), one per LVE with unsafe attempts: the model, the
           LVE's description, the unsafe share and the live reproduction rate with its 95% interval.
    garak  garak's report JSONL (setup, init, attempt, eval and completion entries), each LVE a probe
           and its checker the detector, for garak's analysis tools.
    sarif  SARIF 2.1.0 for GitHub code scanning: a result for each LVE that reproduced on a model in
           the run, its id as the rule, its taxonomy tags and its severity (the run history's evidence
           where there is one, the run's where not) as security-severity; at its test.json when the
           LVE repository scans itself, else at --location FILE of the scanned repository. Live
           attempts only.
    dataset  the repository as a dataset in the folder --output: Parquet tables of instances and LVEs
           (and of the run history with --with-history, of the reports' attempts when given) and a
           dataset card that datasets.load_dataset reads (needs lvegit[data]).
    osv    OSV advisories from the run history (no reports): one record per LVE with an id, each model
           it reproduced on with the versions that introduced and fixed it, the taxonomy and the
           severity from evidence. To stdout one a line, or with --output a folder of <id>.json and
           index.json (needs lvegit[data]).

    The LVEs' descriptions and checkers come from the repository (--repo). Nothing is re-run.

    \b
    Examples:
      lvegit export --format junit run.jsonl --output lvegit-junit.xml
      lvegit export --format avid run.jsonl
      lvegit export --format garak run.jsonl --output lvegit.report.jsonl
      lvegit export --format sarif run.jsonl --output lvegit.sarif
      lvegit export --format dataset --output lve-dataset --license cc-by-4.0 --with-history
      lvegit export --format osv --output advisories
    """
    repo = open_repository(repo_path)
    if export_format == "dataset":
        return _dataset(repo, reports, output, title, license_id, with_history, history_path)
    if export_format == "osv":
        return _osv(repo, reports, output, history_path)
    if not reports:
        raise UsageError(f"--format {export_format} writes reports: give one or more (lvegit run --report)")
    attempts = load_attempts(list(reports))
    try:
        document = _document(export_format, attempts, repo, history_path, location)
    except ImportError as exc:
        raise missing(f"--format {export_format}", "export", exc.name or "junitparser") from None
    if output is None:
        document.show()
        return EXIT_OK
    output.write_text(document.text, encoding="utf-8")
    read = count(len(attempts), "attempt")
    if document.written:
        note(f"{read} read; {document.written} written to {output} as {export_format}")
    else:
        note(f"{read} written to {output} as {export_format}")
    return EXIT_OK


@dataclass(frozen=True)
class _Document:
    text: str  # what a file of it holds
    show: Callable[[], None]  # prints it to stdout, escaped by lvegit.base.output
    written: str = ""  # what the file holds, where that is not one entry per attempt


def _document(
    export_format: str,
    attempts: list[Attempt],
    repo: Repository,
    history_path: Path | None,
    location: Path | None,
) -> _Document:
    """A report format's document of the attempts."""
    if export_format == "junit":
        from lvegit.publish.export.junit import junit_xml

        text = junit_xml(attempts)
        return _Document(text, lambda: print_document(text))
    if export_format == "sarif":
        from lvegit.publish.export.sarif import sarif_log

        statuses = _history_statuses(repo, history_path, sorted({a.lve for a in attempts}))
        log = sarif_log(attempts, repo, statuses, location)
        results = sum(len(run["results"]) for run in log["runs"])
        return _Document(
            json.dumps(log, indent=2, ensure_ascii=False) + "\n",
            lambda: print_json(log),
            f"{count(results, 'result')} (an LVE that reproduced on a model each)",
        )
    if export_format == "avid":
        from lvegit.publish.export.avid import avid_reports

        entries = avid_reports(attempts, repo, repository_url(repo))
    else:
        from lvegit.publish.export.garak import garak_report

        entries = garak_report(attempts, repo)
    return _Document(json_lines(entries), lambda: print_json_lines(entries))


def _dataset(
    repo: Repository,
    reports: tuple[Path, ...],
    output: Path | None,
    title: str,
    license_id: str,
    with_history: bool,
    history_path: Path | None,
) -> int:
    from lvegit.publish.export.dataset import write_dataset

    if output is None:
        raise UsageError("--format dataset writes a folder: give it with --output")
    history = None
    if with_history:
        history = history_dir(repo.root, history_path, current_settings().history.directory)
    dataset = write_dataset(repo, output, title, license_id, history, load_attempts(list(reports)))
    tables = ", ".join(f"{name} {rows:,}" for name, rows in dataset.rows.items())
    line(f"dataset in {output}: {tables} rows")
    if dataset.skipped:
        left_out = count(len(dataset.skipped), "LVE")
        note(f"{left_out} left out (test.json does not load): lvegit validate says why")
    return EXIT_OK


def _osv(repo: Repository, reports: tuple[Path, ...], output: Path | None, history_path: Path | None) -> int:
    from lvegit.history.status import History
    from lvegit.publish.export.osv import advisories, write_advisories

    if reports:
        raise UsageError("--format osv reads the run history, not reports: add runs with lvegit history add")
    folder = history_dir(repo.root, history_path, current_settings().history.directory)
    records, left_out = advisories(repo, History.open(folder).status())
    for path, why in left_out.items():
        note(f"{console(path)}: left out, {why}")
    if output is None:
        print_json_lines(records)
        return EXIT_OK
    output.mkdir(parents=True, exist_ok=True)
    write_advisories(output, output, records, "--output")
    line(f"{count(len(records), 'advisory', 'advisories')} in {output} (index.json lists them)")
    return EXIT_OK


def _history_statuses(
    repo: Repository, history_path: Path | None, lves: list[str]
) -> dict[tuple[str, str], LVEStatus]:
    """The run history's status of these LVEs, where the repository has a history (none: empty)."""
    folder = history_dir(repo.root, history_path, current_settings().history.directory)
    if not folder.is_dir() or not lves:
        return {}
    from lvegit.history.status import History

    return dict(History.open(folder).status(lves))
