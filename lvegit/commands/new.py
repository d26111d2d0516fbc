from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import click

from lvegit.base.errors import UsageError
from lvegit.base.output import line, note
from lvegit.checkers.registry import BUILTIN_NAMES, SCAFFOLD_CHECKER, needs_of
from lvegit.commands.catalog import short_help
from lvegit.commands.options import open_repository, repo_option
from lvegit.lve.problems import PLACEHOLDER
from lvegit.lve.routing_file import route_problem
from lvegit.lve.taxonomy import parse_tag
from lvegit.publish.scaffold import (
    CUSTOM,
    SEVERITIES,
    NewLVE,
    check_parameters,
    check_severity,
    create,
    custom_class_name,
    known_models,
    lve_folder,
    nearest_checker,
    parse_name,
)

AGENTS_GUIDE = "https://lvegit.github.io/lvegit/agents/"


def _ask(text: str, check: Callable[[str], object], default: str | None = None) -> str:
    """Ask until the answer passes `check`; a bad answer is said at once (in lvegit's one form for
    errors, `lvegit: error: ...` on stderr) and asked again."""
    while True:
        answer = str(click.prompt(text, default=default, show_default=bool(default)))
        try:
            check(answer)
        except UsageError as exc:
            note(f"error: {exc}")
            continue
        return answer


def _parameter_list(answer: str) -> list[str]:
    return [p.strip() for p in answer.split(",") if p.strip()]


@click.command("new", short_help=short_help("new"))
@click.argument("name", required=False)
@click.option("--model", help="Model id, e.g. openai/gpt-4 or meta/llama-2-7b-chat.")
@click.option(
    "--checker",
    help=f"A core checker ({', '.join(sorted(BUILTIN_NAMES))}), 'custom', or the class name of a new "
    f"custom checker (both write checker/checker.py). Default: {SCAFFOLD_CHECKER}.",
)
@click.option("--description", help="What the model does wrong.")
@click.option("--author", help="Your name or handle.")
@click.option("--parameter", "parameters", multiple=True, help="A prompt parameter name (repeatable).")
@click.option("--severity", type=click.Choice(SEVERITIES), help="low, medium or high (default: medium).")
@click.option(
    "--tag",
    "tags",
    multiple=True,
    metavar="SCHEME:VALUE",
    help="A taxonomy tag, checked against the shipped lists (repeatable): owasp-llm:2025:LLM01, "
    "owasp-agentic:2026:ASI01, atlas:AML.T0051, avid:S0403, cwe:CWE-1426, or the publisher's id alone "
    "(LLM01:2025).",
)
@click.option(
    "--interactive/--no-interactive",
    default=None,
    help="Ask for what the options leave out (default: only when stdin is a terminal).",
)
@repo_option
def new_command(
    name: str | None,
    model: str | None,
    checker: str | None,
    description: str | None,
    author: str | None,
    parameters: tuple[str, ...],
    severity: str | None,
    tags: tuple[str, ...],
    interactive: bool | None,
    repo_path: Path | None,
) -> int:
    """Scaffold a new LVE: repository/NAME/<model-folder>/ with test.json, test.prompt, instances/ and a
    README (and checker/checker.py for a custom checker).

    NAME is CATEGORY/NAME or CATEGORY/SUBCATEGORY/NAME. On a terminal, lvegit asks for whatever the
    options leave out (NAME too), checking each answer as it is given. Fill in every '<please fill in>'
    placeholder, then run `lvegit validate` on the new folder.

    \b
    Examples:
      lvegit new
      lvegit new privacy/address_leak --model openai/gpt-4 --checker RegexChecker
      lvegit new reliability/arithmetic/divide --model openai/gpt-4o-mini --parameter a --parameter b
      lvegit new security/secret_leak/token_echo --model openai/gpt-4 --checker custom
      lvegit new security/injected_summary --model openai/gpt-4o-mini --tag owasp-llm:2025:LLM01
    """
    repo = open_repository(repo_path)
    if interactive is None:
        interactive = sys.stdin.isatty()
    if interactive and checker and checker not in (*BUILTIN_NAMES, CUSTOM):
        near = nearest_checker(checker)
        if near is not None and click.confirm(
            f"'{checker}' is not a core checker: did you mean {near}?", True
        ):
            checker = near
    if interactive:
        name = name or _ask("Name (CATEGORY/NAME or CATEGORY/SUBCATEGORY/NAME)", parse_name)
        models = known_models(repo)
        model = model or _ask(
            "Model id (PROVIDER/MODEL, e.g. openai/gpt-4)", lambda m: lve_folder(repo, str(name), m, models)
        )
        lve_name = parse_name(name)[-1]
        checker = checker or _ask(
            f"Checker ({', '.join(sorted(BUILTIN_NAMES))}, or '{CUSTOM}')",
            lambda c: custom_class_name(c, lve_name),
            default=SCAFFOLD_CHECKER,
        )
        description = description or click.prompt("Description", default="", show_default=False) or None
        author = author or click.prompt("Author", default="", show_default=False) or None
        if not parameters:
            answer = _ask(
                "Prompt parameters (comma-separated, empty for none)",
                lambda a: check_parameters(_parameter_list(a)),
                default="",
            )
            parameters = tuple(_parameter_list(answer))
        severity = severity or _ask(f"Severity ({', '.join(SEVERITIES)})", check_severity, default="medium")
        if not tags:
            answer = _ask(
                "Taxonomy tags (SCHEME:VALUE, comma-separated, such as owasp-llm:2025:LLM01; empty for none)",
                lambda a: [parse_tag(t, given_as="tag") for t in _parameter_list(a)],
                default="",
            )
            tags = tuple(_parameter_list(answer))
    if not name:
        raise UsageError("give NAME (CATEGORY/NAME), or run lvegit new on a terminal to be asked for it")
    if not model:
        raise UsageError("--model is required (for example --model openai/gpt-4)")
    checked = [parse_tag(tag) for tag in tags]
    spec = NewLVE(
        name,
        model,
        checker or SCAFFOLD_CHECKER,
        description,
        author,
        list(parameters),
        severity or "medium",
        checked,
    )
    created = create(repo, spec)
    lve_dir = created[0].parent
    line(f"Created {repo.relative(lve_dir)}/")
    for path in created:
        line(f"  {path.relative_to(lve_dir).as_posix()}")
    shown = repo.relative(lve_dir)
    line(f"Next: fill in the '{PLACEHOLDER}' placeholders, then: lvegit validate {shown}")
    line(f"Then record an instance (lvegit record {shown}) and refresh its README: lvegit readme {shown}")
    if needs_of(spec.checker).tools or needs_of(spec.checker).environment:
        line(f"Its tools and environment: {AGENTS_GUIDE}")
    unrouted = route_problem(repo.root, model)
    if unrouted is not None:  # the LVE is right as it is; running it needs a route first
        note(f"before lvegit run or record: {unrouted}")
    return 0
