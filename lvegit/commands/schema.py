from __future__ import annotations

from pathlib import Path

import click

from lvegit.base.errors import EXIT_OK
from lvegit.base.records import SCHEMA_DIR
from lvegit.commands.catalog import short_help
from lvegit.publish.schema import KINDS, shipped


def documents() -> dict[str, Path]:
    """The documents lvegit writes, by kind: the shipped schema of each one's newest version."""
    found: dict[str, tuple[int, Path]] = {}
    for path in SCHEMA_DIR.glob("lvegit-*-v*.json"):
        kind, _, version = path.stem.removeprefix("lvegit-").rpartition("-v")
        if int(version) > found.get(kind, (0, path))[0]:
            found[kind] = (int(version), path)
    return {kind: path for kind, (_version, path) in sorted(found.items())}


DOCUMENTS = documents()


@click.command("schema", short_help=short_help("schema"))
@click.argument("kind", type=click.Choice([*KINDS, *DOCUMENTS]))
def schema_command(kind: str) -> int:
    """Print a JSON Schema (draft 2020-12) of KIND, for editors and other tools.

    \b
    KIND is one of:
      test, instance    an LVE's test.json, one line of its instances/*.jsonl
      withheld          a withheld LVE's public abstract, withheld.json
      changed, check, list, models, record, replay, run, sandbox, show, status, validate
                        what that command prints with --format json (report prints a run's)
      history           what lvegit history list prints with --format json
      ids               the ids registry, lve-ids.json (lvegit ids writes it)
      results           the Action's results file

    The schema says what a schema can: the keys and their types, exactly one prompt form, message roles,
    tags, and the arguments lvegit's own checkers need. It never refuses what lvegit validate accepts;
    lvegit validate checks the rest (prompt files, parameters, custom checkers).

    \b
    Examples:
      lvegit schema test
      lvegit schema instance
      lvegit schema withheld
      lvegit schema run
      lvegit schema show
    """
    text = shipped(kind) if kind in KINDS else DOCUMENTS[kind].read_text(encoding="utf-8")
    click.echo(text, nl=False)
    return EXIT_OK
