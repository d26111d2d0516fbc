from __future__ import annotations

from pathlib import Path

import click

from lvegit.base.errors import EXIT_FINDINGS, EXIT_OK
from lvegit.base.output import count, line, print_json
from lvegit.commands.catalog import short_help
from lvegit.commands.lines import finding_lines, validation_status
from lvegit.commands.options import Selection, lve_command_options, open_repository, strict_option
from lvegit.judge.validate import validate_lve


@click.command("validate", short_help=short_help("validate"))
@lve_command_options(strict_option)
def validate_command(
    selection: Selection,
    strict: bool,
    output_format: str,
    repo_path: Path | None,
) -> int:
    """Check LVEs: test.json, prompts, parameters, checker and instances.

    Every finding names the file, the field (a JSON path) and the line. Exit code 1 when an LVE is invalid.

    \b
    Examples:
      lvegit validate --all
      lvegit validate repository/privacy/pii_leakage --strict
      lvegit validate --all --format json --repo .
      lvegit validate --changed --base origin/main
    """
    repo = open_repository(repo_path)
    reports = [validate_lve(repo, lve_dir, strict) for lve_dir in selection.resolve(repo, withheld=True)]
    invalid = sum(not r.valid for r in reports)
    if output_format == "json":
        from lvegit.judge.records import validate_document  # pydantic: only for the JSON document

        print_json(validate_document(reports).model_dump(mode="json", by_alias=True))
    else:
        for report in reports:
            line(f"{report.path}: {validation_status(report)}")
            for finding in finding_lines(report):
                line(finding)
        line(f"{count(len(reports), 'LVE')}: {len(reports) - invalid} valid, {invalid} invalid")
    return EXIT_FINDINGS if invalid else EXIT_OK
