from __future__ import annotations

from pathlib import Path

import click

from lvegit.base.output import line, print_json
from lvegit.commands.catalog import short_help
from lvegit.commands.options import (
    format_option,
    head_revision,
    open_repository,
    repo_option,
    revision_options,
)
from lvegit.git.changes import changed_lves, describe_comparison


@click.command("changed", short_help=short_help("changed"))
@revision_options
@format_option
@repo_option
def changed_command(base: str | None, head: str | None, output_format: str, repo_path: Path | None) -> int:
    """List the LVEs that changed: what have I changed, or what does a pull request change?

    Without --base: the work tree (committed, staged, unstaged and untracked files) against the branch it
    goes into: the current branch's upstream, else origin/HEAD, else main or master. With --base: what
    changed on --head (default HEAD) since it left BASE (git's base...head); without common history the
    two revisions are compared directly. A change to any file inside an LVE counts (test.json, prompt
    files, instances, checker/, README). Renamed LVEs are listed under their new path; deleted LVEs
    separately.

    \b
    Examples:
      lvegit changed
      lvegit changed --base origin/main
      lvegit changed --base main --head my-branch --format json
      lvegit replay --changed
    """
    repo = open_repository(repo_path)
    changes = changed_lves(repo, base, head_revision(base, head))
    if output_format == "json":
        from lvegit.publish.documents import changed_document  # pydantic: only for the JSON document

        print_json(changed_document(changes))
        return 0
    for path in changes.changed:
        origin = changes.renamed.get(path)
        line(f"{path}  (renamed from {origin})" if origin else path)
    for path in changes.removed:
        line(f"{path}  (removed)")
    line(f"{len(changes.changed)} changed, {len(changes.removed)} removed {describe_comparison(changes)}")
    return 0
