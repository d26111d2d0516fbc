from __future__ import annotations

import click

from lvegit.base.errors import EXIT_OK
from lvegit.commands.catalog import short_help
from lvegit.publish.schema import KINDS, SCHEMA_DIR, shipped

# The documents lvegit writes, each with the schema generated from its records (publish/documents.py,
# judge/records.py, run/records.py, github/results.py) and shipped beside the others.
DOCUMENTS = {
    "list": "lvegit-list-v1.json",
    "changed": "lvegit-changed-v1.json",
    "models": "lvegit-models-v1.json",
    "validate": "lvegit-validate-v1.json",
    "replay": "lvegit-replay-v1.json",
    "check": "lvegit-check-v1.json",
    "run": "lvegit-run-v1.json",
    "results": "lvegit-results-v2.json",
}


@click.command("schema", short_help=short_help("schema"))
@click.argument("kind", type=click.Choice([*KINDS, *DOCUMENTS]))
def schema_command(kind: str) -> int:
    """Print a JSON Schema (draft 2020-12): of an LVE's test.json (KIND test) or of one line of its
    instances/*.jsonl (KIND instance), for editors and other tools; or of a document lvegit writes: what
    `list`, `changed`, `models`, `validate`, `replay`, `check`, `run` and `report` print with --format json
    (KIND list, changed, models, validate, replay, check, run: report prints a run's), and the Action's
    results file (KIND results).

    The schema says what a schema can: the keys and their types, exactly one prompt form, message roles,
    tags, and the arguments lvegit's own checkers need. It never refuses what lvegit validate accepts;
    lvegit validate checks the rest (prompt files, parameters, custom checkers).

    \b
    Examples:
      lvegit schema test
      lvegit schema instance
      lvegit schema run
    """
    text = shipped(kind) if kind in KINDS else (SCHEMA_DIR / DOCUMENTS[kind]).read_text(encoding="utf-8")
    click.echo(text, nl=False)
    return EXIT_OK
