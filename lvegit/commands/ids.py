from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click

from lvegit.base.escape import console
from lvegit.base.output import count, line, note, print_json
from lvegit.commands.catalog import short_help
from lvegit.commands.options import SuggestingGroup, format_option, open_repository, repo_option
from lvegit.git.changes import moves_since_last_change
from lvegit.git.vcs import tracked
from lvegit.lve import ids
from lvegit.lve.problems import is_draft
from lvegit.lve.repo import TEST_FILE, Repository
from lvegit.lve.spec import load_lve


@click.group("ids", cls=SuggestingGroup, short_help=short_help("ids"))
def ids_command() -> None:
    """Stable LVE ids (LVE-2026-0042) in lve-ids.json: given once an LVE lands on the default branch,
    never reused, kept when the LVE moves. A trusted workflow runs `lvegit ids assign` after each merge
    (examples/workflows/lvegit-ids.yml); a pull request that changes lve-ids.json fails its check. Every
    command that takes LVE paths takes an id too.

    \b
    Examples:
      lvegit ids list
      lvegit ids assign
      lvegit show LVE-2026-0001
    """


@ids_command.command("assign")
@click.option("--today", help="The day the ids are given, YYYY-MM-DD (default: today, UTC).")
@repo_option
def assign_command(today: str | None, repo_path: Path | None) -> int:
    """Give each new LVE the next id of the year, keep the ids of LVEs that moved (git's rename detection
    on test.json since lve-ids.json was last committed), retire those of LVEs that are gone; write
    lve-ids.json. For the id workflow, on the default branch: never in a pull request.

    \b
    Examples:
      lvegit ids assign
      lvegit ids assign --today 2026-11-26
    """
    repo = open_repository(repo_path)
    registry, done = ids.assign(repo, moves_since_last_change(repo, ids.REGISTRY), today, _waiting(repo))
    for lve_id, path in done.given.items():
        line(f"{lve_id} {path}")
        if not tracked(repo.root / path / TEST_FILE):  # ids are for LVEs as merged
            note(f"{lve_id}: git does not track {console(path)} yet: commit it with {ids.REGISTRY}")
    for lve_id, (old, new) in done.moved.items():
        line(f"{lve_id} moved: {old} -> {new}")
    for lve_id, path in done.retired.items():
        line(f"{lve_id} retired: {path} is gone")
    for path, why in done.left_out.items():
        note(f"no id yet for {console(path)}: {why}")
    if done.given or done.moved or done.retired:
        ids.write(repo, registry)
    line(
        f"{count(len(done.given), 'id')} given, {count(len(done.moved), 'LVE')} moved, "
        f"{len(done.retired)} retired; {count(len(registry.live()), 'LVE')} with an id"
    )
    return 0


def _waiting(repo: Repository) -> Callable[[str], str | None]:
    """Why a new LVE gets no id yet: it is a draft of lvegit new (test.json is read, no code of the LVE
    runs)."""

    def why(path: str) -> str | None:
        lve, problems, _text = load_lve(repo, repo.root / path)
        if lve is None or is_draft(problems):
            return "a draft, or it does not load (lvegit validate says why)"
        return None

    return why


@ids_command.command("list")
@format_option
@repo_option
def list_command(output_format: str, repo_path: Path | None) -> int:
    """List the ids and their LVEs, retired ones with the day they were retired.

    \b
    Examples:
      lvegit ids list
      lvegit ids list --format json
    """
    registry = ids.load(open_repository(repo_path))
    if output_format == "json":
        print_json(registry.as_json())
        return 0
    for lve_id, entry in sorted(registry.ids.items()):
        line(f"{lve_id}  {entry.path}" + (f"  (retired {entry.retired})" if entry.retired else ""))
    line(f"{count(len(registry.ids), 'id')}, {len(registry.live())} in use")
    return 0
