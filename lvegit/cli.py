"""The `lvegit` command group and the one place where errors become exit codes."""

from __future__ import annotations

import sys
import traceback
from typing import Any

import click

from lvegit import __version__
from lvegit.commands.action import action_command
from lvegit.commands.changed import changed_command
from lvegit.commands.list_lves import list_command
from lvegit.commands.new import new_command
from lvegit.commands.record import record_command
from lvegit.commands.replay import replay_command
from lvegit.commands.run import run_command
from lvegit.commands.sandbox_info import sandbox_command
from lvegit.commands.validate import validate_command
from lvegit.errors import EXIT_UNEXPECTED, EXIT_USAGE, LvegitError


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="lvegit")
def cli() -> None:
    """lvegit: manage an LVE repository (Language-model Vulnerabilities and Exposures) in git.

    \b
    Examples:
      lvegit new privacy/address_leak --model openai/gpt-4
      lvegit validate --all
      lvegit replay repository/dummy/math/a_plus_b
      lvegit list --format json
    """


for command in (
    new_command,
    validate_command,
    replay_command,
    run_command,
    record_command,
    list_command,
    changed_command,
    sandbox_command,
    action_command,
):
    cli.add_command(command)


def main(argv: list[str] | None = None) -> Any:
    """Run the CLI: exit 0 ok, 1 findings, 2 usage, 3 unexpected error."""
    try:
        code = cli.main(args=argv, prog_name="lvegit", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        code = EXIT_USAGE
    except click.ClickException as exc:
        exc.show()
        code = EXIT_USAGE
    except LvegitError as exc:
        click.echo(f"lvegit: error: {exc}", err=True)
        code = exc.exit_code
    except Exception:
        click.echo("lvegit: unexpected error (please report it with the trace below):", err=True)
        click.echo(traceback.format_exc(), err=True)
        code = EXIT_UNEXPECTED
    sys.exit(code if isinstance(code, int) else 0)
