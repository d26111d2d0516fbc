from __future__ import annotations

import click

from lvegit.base.errors import EXIT_OK
from lvegit.commands.catalog import short_help
from lvegit.publish.schema import KINDS, shipped


@click.command("schema", short_help=short_help("schema"))
@click.argument("kind", type=click.Choice(KINDS))
def schema_command(kind: str) -> int:
    """Print the JSON Schema (draft 2020-12) of an LVE's test.json (KIND test) or of one line of its
    instances/*.jsonl (KIND instance), for editors and other tools.

    The schema says what a schema can: the keys and their types, exactly one prompt form, message roles,
    tags, and the arguments lvegit's own checkers need. It never refuses what lvegit validate accepts;
    lvegit validate checks the rest (prompt files, parameters, custom checkers).

    \b
    Examples:
      lvegit schema test
      lvegit schema instance
    """
    click.echo(shipped(kind), nl=False)
    return EXIT_OK
