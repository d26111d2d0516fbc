from __future__ import annotations

from pathlib import Path

import click

from lvegit.base.errors import EXIT_OK
from lvegit.base.escape import console
from lvegit.base.output import count, line
from lvegit.commands.catalog import short_help
from lvegit.commands.options import current_settings, history_option, open_repository, repo_option
from lvegit.history.store import history_dir


@click.command("site", short_help=short_help("site"))
@click.argument("out", type=click.Path(path_type=Path, file_okay=False))
@click.option(
    "--reports",
    "reports",
    multiple=True,
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="A run report (lvegit run --report FILE) whose live reproduction rates the pages show; repeatable.",
)
@click.option("--base-url", help="Where the site is published (https://...): canonical links name it.")
@click.option("--title", default="LVE repository", show_default=True, help="The site's title.")
@history_option
@repo_option
def site_command(
    out: Path,
    reports: tuple[Path, ...],
    base_url: str | None,
    title: str,
    history_path: Path | None,
    repo_path: Path | None,
) -> int:
    """Write a static website of the repository into OUT: an overview of unsafe instances by category and
    model, a page per category and per LVE (prompt with its parameters marked, checker, instances), and
    filters that work without a server. With a run history (lvegit history), a page of every LVE's status
    by model, and on each LVE's page a timeline of its unsafe rate across runs and model versions.

    The pages link relatively and load nothing from the network: open OUT/index.html from disk, or
    publish OUT (for example with GitHub Pages, under a sub-path). The same repository gives the same files.

    \b
    Examples:
      lvegit site site/
      lvegit site site/ --title "Our LVEs" --base-url https://org.github.io/lves/
      lvegit site site/ --reports run.jsonl
    """
    from lvegit.publish.site.build import build

    repo = open_repository(repo_path)
    history = history_dir(repo.root, history_path, current_settings().history.directory)
    site = build(repo, out, title, list(reports), base_url, history)
    skipped = (
        f"; {count(len(site.skipped), 'LVE')} left out (a draft, or test.json does not load: lvegit validate "
        f"says why): {', '.join(console(path) for path in site.skipped[:5])}"
        + (", ..." if len(site.skipped) > 5 else "")
        if site.skipped
        else ""
    )
    pages = f"{count(len(site.rows), 'LVE page')} and {count(len(site.categories), 'category page')}"
    line(f"{pages} in {out}{skipped}")
    if site.statuses:
        line(f"status by model from {count(site.runs, 'run')} of the run history: {out / 'status.html'}")
    line(f"open {out / 'index.html'}")
    return EXIT_OK
