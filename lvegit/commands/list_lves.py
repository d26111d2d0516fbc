from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from lvegit.base.escape import console
from lvegit.base.output import count, line, print_json
from lvegit.commands.catalog import short_help
from lvegit.commands.options import Selection, lve_command_options, open_repository
from lvegit.publish.summary import summarize_lves


@click.command("list", short_help=short_help("list"))
@lve_command_options()
def list_command(
    selection: Selection,
    output_format: str,
    repo_path: Path | None,
) -> int:
    """List LVEs with category, model, checker and instance count.

    A field that test.json lacks or gets wrong shows as (invalid); lvegit validate says why.

    \b
    Examples:
      lvegit list
      lvegit list repository/privacy --format json
    """
    repo = open_repository(repo_path)
    rows = summarize_lves(repo, selection.resolve(repo))
    if output_format == "json":
        from lvegit.publish.documents import list_document  # pydantic: only for the JSON document

        print_json(list_document(rows))
        return 0
    with_ids = ("id",) if any(row["id"] for row in rows) else ()  # a repository without lve-ids.json: none
    headers = (*with_ids, "path", "category", "model", "checker", "instances")

    def cell(row: dict[str, Any], header: str) -> str:
        value = row[header]
        if value is None:  # a field test.json lacks or gets wrong: validate says what; no id given yet
            return "-" if header == "id" else "(invalid)"
        return console(str(value))

    # Cells are escaped before measuring, so that columns line up with what is printed.
    table = [headers, *[tuple(cell(row, h) for h in headers) for row in rows]]
    widths = [max(len(cells[i]) for cells in table) for i in range(len(headers))]
    for cells in table:
        line("  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True)).rstrip())
    line(f"{count(len(rows), 'LVE')}, {count(sum(int(row['instances']) for row in rows), 'instance')}")
    return 0
