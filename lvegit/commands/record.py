from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from lvegit.base.errors import EXIT_FINDINGS, EXIT_OK, EXIT_SERVICE, UsageError
from lvegit.base.output import line, note, print_json
from lvegit.commands.catalog import short_help
from lvegit.commands.options import (
    Selection,
    current_settings,
    lve_command_options,
    open_repository,
)
from lvegit.lve.repo import Repository
from lvegit.lve.spec import LVE, blocking_errors, load_lve
from lvegit.models.routing import ModelPool
from lvegit.run.attempt import Attempt
from lvegit.run.record import check_file_name, parse_params, record_instances, recording


@click.command("record", short_help=short_help("record"))
@lve_command_options(
    click.option(
        "--param",
        "params",
        multiple=True,
        metavar="NAME=VALUE",
        help="A prompt parameter (repeatable); VALUE is read as JSON when it parses (12, 1.5, true, "
        '["a", "b"]), else as text. With several LVEs, each gets the parameters it declares.',
    ),
    click.option(
        "--param-str",
        "text_params",
        multiple=True,
        metavar="NAME=VALUE",
        help="A prompt parameter whose VALUE is always text (for text that looks like a number: 007).",
    ),
    click.option("--temperature", type=float, help="Overrides the LVE's default_model_args temperature."),
    click.option("--author", help="Your name or handle, stored with the instance."),
    click.option(
        "--file",
        "file_name",
        default="instances.jsonl",
        show_default=True,
        help="The file in the LVE's instances/ folder to append to.",
    ),
    models=True,
)
def record_command(
    selection: Selection,
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
    """Run one new instance of each selected LVE against its model and append it.

    The checker judges the response, postprocess_response rewrites it (e.g. redacting private data) before
    it is shown or stored, and the instance is appended as one line to instances/FILE. Every recording is
    new evidence: recording the same parameters twice appends two instances. LVEs are selected as for
    `lvegit run` (paths, --all, --tag, --changed); several are recorded at once, and with --format json
    each prints its document on a line of its own.

    \b
    Examples:
      lvegit record repository/reliability/arithmetic/multiply --param a=1234 --param b=5678
      lvegit record repository/privacy/pii_leakage/contact_details --param person="Jane Doe" --author me
      lvegit record repository/reliability/arithmetic/multiply --param a=1 --param b=2 --file edge_cases.jsonl
      lvegit record --tag owasp-llm:2025:LLM06 --param folder=Downloads --author me
    """
    repo = open_repository(repo_path)
    check_file_name(file_name)
    selected = selection.resolve(repo)
    if not selected:
        raise UsageError("no LVE selected: give LVE folders, --all, --tag or --changed")
    several = len(selected) > 1
    tasks, values, refused = [], [], 0
    for lve_dir in selected:
        try:
            lve, given = _parameters(repo, lve_dir, params, text_params, several)
            tasks.append(recording(lve, given, temperature, file_name))
            values.append(given)
        except UsageError as exc:
            if not several:
                raise
            note(f"error: {repo.relative(lve_dir)}: {exc}")  # the others are recorded as usual
            refused += 1
    if several:
        named = {pair.partition("=")[0] for pair in (*params, *text_params)}
        declared = {name for task in tasks for name in task.lve.parameter_names}
        unknown = sorted(named - declared)
        if unknown and tasks:
            raise UsageError(f"no selected LVE has the prompt parameter '{unknown[0]}'")
    pool = ModelPool(repo.root, device, dtype)
    policy = replace(current_settings().retry, attempts=retries + 1)
    attempts = record_instances(pool, tasks, author, policy)
    for attempt, given in zip(attempts, values, strict=True):
        _show(repo, attempt, given, output_format, several)
    codes = [
        EXIT_SERVICE if a.error_source == "model" else EXIT_FINDINGS
        for a in attempts
        if a.status != "complete"
    ]
    if refused:
        codes.append(EXIT_FINDINGS)
    return max(codes, default=EXIT_OK)


def _parameters(
    repo: Repository, lve_dir: Path, params: tuple[str, ...], text_params: tuple[str, ...], several: bool
) -> tuple[LVE, dict[str, Any]]:
    """A valid LVE and the values of its prompt parameters, or a UsageError saying what is wrong."""
    lve, problems, _ = load_lve(repo, lve_dir)
    blocking = blocking_errors(problems)
    if lve is None or blocking:
        raise UsageError(
            f"{repo.relative(lve_dir)} is invalid: {blocking[0].render() if blocking else ''}; "
            "run lvegit validate"
        )
    return lve, parse_params(lve, params, text_params, others=several)


def _show(
    repo: Repository, attempt: Attempt, values: dict[str, Any], output_format: str, several: bool
) -> None:
    if output_format == "json":
        from lvegit.run.records import record_document  # pydantic: only for the JSON document

        print_json(record_document(attempt), indent=None if several else 2)  # several: a line each
    elif attempt.status != "complete":
        where = f"{attempt.lve}: " if several else ""
        note(f"error: {where}{attempt.error}")  # every error in one form: `lvegit: error: ...` on stderr
    else:
        if several:
            line(f"{attempt.lve}:")
        shown = ", ".join(f"{name}={json.dumps(value, ensure_ascii=False)}" for name, value in values.items())
        line(f"parameters: {shown}")
        line(f"verdict: {'safe' if attempt.verdict else 'unsafe'} (passed={json.dumps(attempt.verdict)})")
        line(f"response: {json.dumps(attempt.response, ensure_ascii=False)}")
        assert attempt.appended_to is not None  # a complete recording is always appended
        line(f"appended to {repo.relative(Path(attempt.appended_to))}")
