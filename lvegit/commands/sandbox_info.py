from __future__ import annotations

import tempfile
from pathlib import Path

import click

from lvegit.base.output import line, print_json
from lvegit.checkers.sandbox import CheckerWorker
from lvegit.commands.catalog import short_help
from lvegit.commands.options import format_option


@click.command("sandbox", short_help=short_help("sandbox"))
@format_option
def sandbox_command(output_format: str) -> int:
    """Show how custom checker code (checker/checker.py) is confined on this machine.

    lvegit runs contributed checker code only in a separate worker process. This starts one and reports
    which isolation layers the machine allowed: namespaces (read-only filesystem, no network, own process
    tree), seccomp (no new processes, programs or sockets) and resource limits.

    \b
    Examples:
      lvegit sandbox
      lvegit sandbox --format json
    """
    with tempfile.TemporaryDirectory() as empty_lve:
        worker = CheckerWorker("sandbox", Path(empty_lve))
        worker.close()
    if output_format == "json":
        from lvegit.publish.documents import sandbox_document  # pydantic: only for the JSON document

        print_json(sandbox_document(worker.isolation))
    else:
        line("Custom checkers run in a separate process without secrets in its environment:")
        for layer in worker.isolation:
            line(f"  {layer}")
    return 0
