from __future__ import annotations

from pathlib import Path

import click

from lvegit.changes import changed_lves
from lvegit.commands.catalog import short_help
from lvegit.errors import UsageError
from lvegit.options import format_option, open_repository, repo_option, revision_options
from lvegit.output import line, print_json


@click.command("changed", short_help=short_help("changed"))
@revision_options
@format_option
@repo_option
def changed_command(base: str | None, head: str, output_format: str, repo_path: Path | None) -> int:
    """List the LVEs that changed on HEAD since it left BASE (git's base...head).

    A change to any file inside an LVE counts (test.json, prompt files, instances, checker/, README).
    Renamed LVEs are listed under their new path; deleted LVEs separately. Without common history the
    two revisions are compared directly.

    \b
    Examples:
      lvegit changed --base origin/main
      lvegit changed --base main --head my-branch --format json
      lvegit replay --changed --base origin/main
    """
    if not base:
        raise UsageError("--base REF is required (for example --base origin/main)")
    repo = open_repository(repo_path)
    changes = changed_lves(repo, base, head)
    if output_format == "json":
        print_json(changes.as_json())
        return 0
    for path in changes.changed:
        origin = changes.renamed.get(path)
        line(f"{path}  (renamed from {origin})" if origin else path)
    for path in changes.removed:
        line(f"{path}  (removed)")
    line(
        f"{len(changes.changed)} changed, {len(changes.removed)} removed between "
        f"{changes.base[:12]} and {changes.head[:12]}"
    )
    return 0
