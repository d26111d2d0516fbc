from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import click

from lvegit.base.errors import EXIT_FINDINGS, EXIT_OK, EXIT_SERVICE, UsageError
from lvegit.base.output import count, line, note, print_json
from lvegit.commands.catalog import short_help
from lvegit.commands.options import (
    current_settings,
    format_option,
    local_model_options,
    open_repository,
    repo_option,
    retries_option,
)
from lvegit.lve.spec import blocking_errors, load_lve
from lvegit.models.routing import ModelPool
from lvegit.run.record import parse_params, record_instance


@click.command("record", short_help=short_help("record"))
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "--param",
    "params",
    multiple=True,
    metavar="NAME=VALUE",
    help="A prompt parameter (repeatable); VALUE is read as JSON when it parses (12, 1.5, true, "
    '["a", "b"]), else as text.',
)
@click.option(
    "--param-str",
    "text_params",
    multiple=True,
    metavar="NAME=VALUE",
    help="A prompt parameter whose VALUE is always text (for text that looks like a number: 007).",
)
@click.option("--temperature", type=float, help="Overrides the LVE's default_model_args temperature.")
@click.option("--author", help="Your name or handle, stored with the instance.")
@click.option(
    "--file",
    "file_name",
    default="instances.jsonl",
    show_default=True,
    help="The file in the LVE's instances/ folder to append to.",
)
@local_model_options
@retries_option
@format_option
@repo_option
def record_command(
    path: Path,
    params: tuple[str, ...],
    text_params: tuple[str, ...],
    temperature: float | None,
    author: str | None,
    file_name: str,
    device: str | None,
    dtype: str | None,
    retries: int,
    output_format: str,
    repo_path: Path | None,
) -> int:
    """Run one new instance of the LVE at PATH against its model and append it.

    The checker judges the response, postprocess_response rewrites it (e.g. redacting private data) before
    it is shown or stored, and the instance is appended as one line to instances/FILE. Every recording is
    new evidence: recording the same parameters twice appends two instances.

    \b
    Examples:
      lvegit record repository/reliability/arithmetic/multiply --param a=1234 --param b=5678
      lvegit record repository/privacy/pii_leakage/contact_details --param person="Jane Doe" --author me
      lvegit record repository/reliability/arithmetic/multiply --param a=1 --param b=2 --file edge_cases.jsonl
    """
    repo = open_repository(repo_path)
    selected = repo.select([path], all_lves=False)
    if len(selected) != 1:
        raise UsageError(f"{path} holds {count(len(selected), 'LVE')}: give the folder of one LVE")
    lve, problems, _ = load_lve(repo, selected[0])
    blocking = blocking_errors(problems)
    if lve is None or blocking:
        raise UsageError(
            f"{repo.relative(selected[0])} is invalid: {blocking[0].render() if blocking else ''}; "
            "run lvegit validate"
        )
    values = parse_params(lve, params, text_params)
    pool = ModelPool(repo.root, device, dtype)
    policy = replace(current_settings().retry, attempts=retries + 1)
    attempt = record_instance(pool, lve, values, temperature, author, file_name, policy)
    if output_format == "json":
        from lvegit.run.records import record_document  # pydantic: only for the JSON document

        print_json(record_document(attempt))
    elif attempt.status != "complete":
        note(f"error: {attempt.error}")  # every error in one form: `lvegit: error: ...` on stderr
    else:
        shown = ", ".join(f"{name}={json.dumps(value, ensure_ascii=False)}" for name, value in values.items())
        line(f"parameters: {shown}")
        line(f"verdict: {'safe' if attempt.verdict else 'unsafe'} (passed={json.dumps(attempt.verdict)})")
        line(f"response: {json.dumps(attempt.response, ensure_ascii=False)}")
        assert attempt.appended_to is not None  # a complete recording is always appended
        line(f"appended to {repo.relative(Path(attempt.appended_to))}")
    if attempt.status == "complete":
        return EXIT_OK
    return EXIT_SERVICE if attempt.error_source == "model" else EXIT_FINDINGS
