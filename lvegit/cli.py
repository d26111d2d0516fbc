"""The `lvegit` command group and the one place where errors become exit codes."""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
import sys
from typing import TYPE_CHECKING, Any

import click

from lvegit import __version__
from lvegit.base.errors import (
    EXIT_CLOSED_PIPE,
    EXIT_INTERRUPTED,
    EXIT_UNEXPECTED,
    EXIT_USAGE,
    Interrupted,
    LvegitError,
)
from lvegit.base.escape import console_lines
from lvegit.commands.catalog import COMMANDS
from lvegit.commands.options import SuggestingGroup

if TYPE_CHECKING:
    from lvegit.base.settings import Settings


# click 8.2 and later raise this for a group run without a command (earlier versions print the help).
NO_ARGS_IS_HELP: Any = getattr(click.exceptions, "NoArgsIsHelpError", ())


class LazyGroup(SuggestingGroup):
    """Commands are imported when they run; the command list in --help comes from the catalog."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, attribute, _help = COMMANDS[cmd_name]
        command = getattr(importlib.import_module(module), attribute)
        assert isinstance(command, click.Command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, entry[2]) for name, entry in COMMANDS.items()])


@click.group(
    cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100}
)
@click.version_option(__version__, prog_name="lvegit")
@click.option("--settings-json", hidden=True, help="What a child lvegit process runs with (from its parent).")
@click.pass_context
def cli(ctx: click.Context, settings_json: str | None) -> None:
    """lvegit: manage an LVE repository (Language-model Vulnerabilities and Exposures) in git.

    \b
    Examples:
      lvegit new privacy/address_leak --model openai/gpt-4
      lvegit validate --all
      lvegit replay repository/reliability/arithmetic
      lvegit run --changed --base origin/main
      lvegit list --format json
    """
    # The one place where the command line and the LVEGIT_* environment become settings, once per command.
    from lvegit.base.settings import Settings, configure

    invocation = ctx.ensure_object(dict)  # from main: the command line and the settings a caller chose
    given = invocation.get("settings") or Settings()
    fields = {"argv": invocation.get("argv", ()), "retry": given.retry}
    if settings_json is not None:
        configure(Settings.from_flag(settings_json, **fields))
    else:
        configure(Settings.from_environment(os.environ, **fields))
        if os.environ.get("GITHUB_ACTIONS") == "true":  # once per command, not in its child processes
            _warn_if_unreleased()


# Where the templates' `lvegit/lvegit@main` and `pip install "lvegit @ git+...@main"` say to look.
PINNING = "https://lvegit.github.io/lvegit/action/#pinning-lvegit"


def _warn_if_unreleased() -> None:
    """A workflow copied from examples/workflows/ unchanged runs lvegit from main: say, as an annotation on
    the run, that it follows every change there and how to pin it."""
    from lvegit.base.versions import is_release

    if not is_release(__version__):
        click.echo(
            f"::warning title=lvegit {__version__} is not a release::This workflow runs lvegit from a "
            "branch, as examples/workflows/ have it until you pin it: replace `@main` in "
            "`uses: lvegit/lvegit@main` and in `pip install ...lvegit@main` with the commit of a release "
            f"tag, or install `lvegit==X.Y.Z` once lvegit is on PyPI ({PINNING})",
            err=True,
        )


def _silence_stdout() -> None:
    """The reader closed the pipe (`lvegit list | head -1`): drop what is still buffered, quietly."""
    with contextlib.suppress(OSError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def main(argv: list[str] | None = None, settings: Settings | None = None) -> Any:
    """Run the CLI: exit 0 ok, 1 findings, 2 usage, 3 unexpected error, 130 interrupted, 141 closed pipe.
    Every error prints the same way: `lvegit: error: ...`."""
    if argv is None:  # the lvegit program itself, not a caller in its own process (the tests)
        # pydantic reads the entry points of every installed package, looking for plugins, before it builds
        # lvegit's first model (about 4% of a cold check's instructions); lvegit's models use none. A
        # setting of the caller's stands.
        os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
        # What a killed lvegit (SIGKILL: a cancelled job) left in its sandbox's scratch folders goes at the
        # next start of any command, not only of one that starts a sandbox again.
        from lvegit.sandbox.scratch import sweep

        sweep()
    from lvegit.disclosure.identity import take_from_environment

    take_from_environment()  # before anything can start a process that would inherit the key
    try:
        args = sys.argv[1:] if argv is None else argv
        # The context is driven here rather than by cli.main, whose own handling would turn a closed
        # pipe into exit 1 and Ctrl-C into a bare "Aborted!".
        invocation = {"argv": tuple(args), "settings": settings}
        with cli.make_context("lvegit", list(args), obj=invocation) as ctx:
            code = cli.invoke(ctx)
    except click.exceptions.Exit as exc:  # --help, --version
        code = exc.exit_code
    except NO_ARGS_IS_HELP as exc:  # `lvegit`, `lvegit history`: the group's help, as --help shows it
        click.echo(exc.ctx.get_help() if exc.ctx is not None else exc.format_message())
        code = 0
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo("\nlvegit: interrupted", err=True)
        code = EXIT_INTERRUPTED
    except Interrupted as exc:
        click.echo(f"\nlvegit: {console_lines(str(exc))}", err=True)
        code = exc.exit_code
    except click.ClickException as exc:
        hint = ""
        if isinstance(exc, click.UsageError) and exc.ctx is not None:
            hint = f" (see '{exc.ctx.command_path} --help')"
        message = exc.format_message().expandtabs(2)  # click indents its lists of choices with tabs
        click.echo(f"lvegit: error: {console_lines(message)}{hint}", err=True)
        code = EXIT_USAGE
    except BrokenPipeError:
        _silence_stdout()
        code = EXIT_CLOSED_PIPE
    except LvegitError as exc:
        click.echo(f"lvegit: error: {console_lines(str(exc))}", err=True)
        code = exc.exit_code
    except Exception:
        import traceback  # only for the unexpected: not on every start-up

        click.echo("lvegit: unexpected error (please report it with the trace below):", err=True)
        click.echo(console_lines(traceback.format_exc()), err=True)
        code = EXIT_UNEXPECTED
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
        code = EXIT_CLOSED_PIPE
    if argv is None:  # the lvegit program itself, not a caller in its own process (the tests)
        # The process ends now: spare it the collector's last pass over every object still alive (a
        # tenth of a second after a run); atexit handlers still run.
        gc.freeze()
    sys.exit(code if isinstance(code, int) else 0)
