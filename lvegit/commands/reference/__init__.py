"""The command reference (docs/reference.md, committed so that GitHub shows it too), written from the
commands themselves by `python -m lvegit.commands.reference docs/reference.md`: each command's usage, its
help text with every block that `--help` keeps as written (click's `\\b` paragraphs: the examples) as a code
block, and a table of its options whose descriptions and defaults are click's own help records, so that the
page says what `lvegit COMMAND --help` says.

mkdocs-click did this until click 8.2 made an unset default a sentinel it printed (`Sentinel.UNSET`) and
ran the examples together into one paragraph.

Help text outside code is escaped for Markdown: `<NAME>` would otherwise be raw HTML that the page swallows,
and `INPUT_*` ... `*` emphasis.
"""

from __future__ import annotations

import html
import inspect
import re
from collections.abc import Iterator

import click

_DEFAULT = re.compile(r"\s*\[([^\[\]]*)\]$")  # the bracket click ends an option's help with


HEADER = """# Command reference

Generated from the commands themselves (`python -m lvegit.commands.reference docs/reference.md`; a test
checks it is current): each section says what `lvegit COMMAND --help` prints, its examples as code and every
option with its default.
"""
_CODE_SPAN = re.compile(r"(`[^`\n]*`)")
_MARKDOWN = re.compile(r"([\\*_\[\]])")


def text(words: str) -> str:
    """Help text as Markdown that shows every character: code spans as they are, the rest escaped."""
    parts = _CODE_SPAN.split(words)
    return "".join(
        part if index % 2 else _MARKDOWN.sub(r"\\\1", html.escape(part, quote=False))
        for index, part in enumerate(parts)
    )


def _cell(words: str) -> str:
    return text(" ".join(words.split())).replace("|", "\\|")


def option_rows(command: click.Command, ctx: click.Context) -> list[tuple[str, str, str]]:
    """(option, description, default) for each option `--help` lists, from click's help records."""
    rows = []
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx) if isinstance(param, click.Option) else None
        if record is None:  # an argument (the usage line names it), or a hidden option
            continue
        names, text = record
        found = _DEFAULT.search(text)
        extra = found.group(1) if found else ""
        default = next(
            (part.split(": ", 1)[1] for part in extra.split("; ") if part.startswith("default: ")), ""
        )
        description = text[: found.start()] if found else text
        if "required" in extra.split("; "):
            description += " (required)"
        rows.append((names, description, default))
    return rows


def help_blocks(text: str) -> Iterator[tuple[bool, str]]:
    """The paragraphs of a help text, each with whether click keeps it as written (a `\\b` block)."""
    for paragraph in re.split(r"\n\s*\n", inspect.cleandoc(text)):
        if paragraph.startswith("\b"):
            yield True, inspect.cleandoc(paragraph.removeprefix("\b").strip("\n"))
        elif paragraph.strip():
            yield False, " ".join(paragraph.split())


def _section(command: click.Command, ctx: click.Context) -> list[str]:
    path = ctx.command_path
    lines = [f"## {path}", "", "```text", command.get_usage(ctx).strip(), "```", ""]
    for verbatim, block in help_blocks(command.help or ""):
        lines += [text(block), ""] if not verbatim else _verbatim(block)
    rows = option_rows(command, ctx)
    if rows:
        lines += ["| Option | Description | Default |", "|---|---|---|"]
        lines += [
            f"| `{' '.join(names.split())}` | {_cell(help_text)} | {_cell(default)} |"
            for names, help_text, default in rows
        ]
        lines.append("")
    return lines


def _verbatim(block: str) -> list[str]:
    """A `\\b` block: a heading line such as `Examples:` as text, what follows it as a code block."""
    first, _, rest = block.partition("\n")
    if first.rstrip().endswith(":") and rest.strip():
        return [text(first.strip()), "", "```text", inspect.cleandoc(rest), "```", ""]
    return ["```text", block, "```", ""]


def _commands(group: click.Group, ctx: click.Context) -> Iterator[tuple[click.Command, click.Context]]:
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        sub = click.Context(command, info_name=name, parent=ctx)
        yield command, sub
        if isinstance(command, click.Group):
            yield from _commands(command, sub)


def reference(group: click.Group, prog: str) -> str:
    """The whole reference: the program, then every command and subcommand in the order --help lists."""
    ctx = click.Context(group, info_name=prog)
    lines = _section(group, ctx)
    for command, sub in _commands(group, ctx):
        lines += _section(command, sub)
    return "\n".join(lines)


def page(group: click.Group) -> str:
    """docs/reference.md as it should read, for the program `group` (the CLI, which `__main__` passes in:
    the generator sits below the CLI and does not import it)."""
    return f"{HEADER}\n{reference(group, 'lvegit')}\n"
