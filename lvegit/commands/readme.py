from __future__ import annotations

from pathlib import Path

import click

from lvegit.base.errors import EXIT_FINDINGS, EXIT_OK
from lvegit.base.escape import console
from lvegit.base.output import count, line
from lvegit.commands.catalog import short_help
from lvegit.commands.options import Selection, open_repository, repo_option, selection_options
from lvegit.publish.readme import ReadmeError, readme_of, write_readme


@click.command("readme", short_help=short_help("readme"))
@selection_options
@click.option(
    "--check", is_flag=True, help="Change nothing; exit 1 listing the READMEs that are out of date."
)
@repo_option
def readme_command(selection: Selection, check: bool, repo_path: Path | None) -> int:
    """Write or refresh the generated part of each LVE's README.md: description, model, checker (name,
    arguments, docstring), prompt, parameters, an example safe and an example unsafe instance.

    The part lies between <!-- lvegit:readme:start --> and <!-- lvegit:readme:end -->; every byte outside
    it is kept. A README written by lve-tools (no markers) has its fields refreshed where they stand, and
    nothing else changes. A README with neither gets the section appended. Exit code 1 with --check when a
    README is out of date, and whenever an LVE's README cannot be refreshed.

    \b
    Examples:
      lvegit readme repository/reliability/arithmetic/multiply/openai--gpt-4o-mini
      lvegit readme --all
      lvegit readme --all --check
      lvegit readme --changed
    """
    repo = open_repository(repo_path)
    stale = unchanged = failed = 0
    for lve_dir in selection.resolve(repo):
        where = f"{repo.relative(lve_dir)}/README.md"
        try:
            update = readme_of(repo, lve_dir)
            if update.stale and not check:
                write_readme(update)
        except ReadmeError as exc:
            line(console(f"{where}: not refreshed: {exc}"))
            failed += 1
            continue
        if not update.stale:
            unchanged += 1
            continue
        stale += 1
        if check:
            line(console(f"{where}: out of date"))
        else:
            line(console(f"{where}: {'written' if update.before is None else 'refreshed'}"))
    done = "out of date" if check else "written or refreshed"
    problems = f", {failed} not refreshed" if failed else ""
    line(f"{count(stale + unchanged + failed, 'README')}: {stale} {done}, {unchanged} up to date{problems}")
    if check and stale:
        line("run lvegit readme with the same selection to refresh them")
    return EXIT_FINDINGS if failed or (check and stale) else EXIT_OK
