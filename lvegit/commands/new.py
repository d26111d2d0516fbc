from __future__ import annotations

import sys
from pathlib import Path

import click

from lvegit.checkers import BUILTIN_CHECKERS
from lvegit.commands.catalog import short_help
from lvegit.errors import UsageError
from lvegit.options import open_repository, repo_option
from lvegit.output import line
from lvegit.scaffold import CUSTOM, SEVERITIES, NewLVE, create
from lvegit.spec import PLACEHOLDER


@click.command("new", short_help=short_help("new"))
@click.argument("name")
@click.option("--model", help="Model id, e.g. openai/gpt-4 or meta/llama-2-7b-chat.")
@click.option(
    "--checker",
    help=f"A core checker ({', '.join(sorted(BUILTIN_CHECKERS))}), 'custom', or the class name of a new "
    "custom checker (both write checker/checker.py). Default: LambdaChecker.",
)
@click.option("--description", help="What the model does wrong.")
@click.option("--author", help="Your name or handle.")
@click.option("--parameter", "parameters", multiple=True, help="A prompt parameter name (repeatable).")
@click.option("--severity", type=click.Choice(SEVERITIES), default="medium", show_default=True)
@click.option(
    "--interactive/--no-interactive",
    default=None,
    help="Ask for missing options (default: only when stdin is a terminal).",
)
@repo_option
def new_command(
    name: str,
    model: str | None,
    checker: str | None,
    description: str | None,
    author: str | None,
    parameters: tuple[str, ...],
    severity: str,
    interactive: bool | None,
    repo_path: Path | None,
) -> int:
    """Scaffold a new LVE: repository/NAME/<model-folder>/ with test.json, test.prompt, instances/ and a
    README (and checker/checker.py for a custom checker).

    NAME is CATEGORY/NAME or CATEGORY/SUBCATEGORY/NAME. Fill in every '<please fill in>' placeholder, then
    run `lvegit validate` on the new folder.

    \b
    Examples:
      lvegit new privacy/address_leak --model openai/gpt-4 --checker RegexChecker
      lvegit new dummy/math/a_times_b --model openai/gpt-3.5-turbo --parameter a --parameter b
      lvegit new security/secret_leak --model openai/gpt-4 --checker custom
    """
    repo = open_repository(repo_path)
    if interactive is None:
        interactive = sys.stdin.isatty()
    if interactive:
        model = model or click.prompt("Model id (e.g. openai/gpt-4)")
        checker = checker or click.prompt(
            f"Checker ({', '.join(sorted(BUILTIN_CHECKERS))}, or '{CUSTOM}')", default="LambdaChecker"
        )
        description = description or click.prompt("Description", default="", show_default=False) or None
        author = author or click.prompt("Author", default="", show_default=False) or None
        if not parameters:
            answer = click.prompt(
                "Prompt parameters (comma-separated, empty for none)", default="", show_default=False
            )
            parameters = tuple(p.strip() for p in answer.split(",") if p.strip())
    if not model:
        raise UsageError("--model is required (for example --model openai/gpt-4)")
    spec = NewLVE(name, model, checker or "LambdaChecker", description, author, list(parameters), severity)
    created = create(repo, spec)
    lve_dir = created[0].parent
    line(f"Created {repo.relative(lve_dir)}/")
    for path in created:
        line(f"  {path.relative_to(lve_dir).as_posix()}")
    line(f"Next: fill in the '{PLACEHOLDER}' placeholders, then: lvegit validate {repo.relative(lve_dir)}")
    return 0
