from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from lvegit.base.errors import UsageError
from lvegit.base.escape import console
from lvegit.base.output import count, print_json, styled, styled_line
from lvegit.commands.catalog import short_help
from lvegit.commands.options import format_option, open_repository, repo_option
from lvegit.judge.results import judge_said
from lvegit.lve.ids import resolve_ids
from lvegit.lve.prompt import response_text
from lvegit.lve.repo import is_withheld
from lvegit.lve.template import SHOWN_PARAMETER
from lvegit.lve.tools import ReturnCase
from lvegit.publish.show import lve_view

MAX_TEXT = 300  # characters of a prompt message or a response shown in the terminal


def _short(value: Any) -> str:
    text = response_text(value, indent=None, separator="; ")
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + f"… ({len(text)} characters)"


def _field(name: str, value: str) -> None:
    styled_line("  ", styled(f"{name}:", bold=True), " ", console(value))


def _message(message: dict[str, Any], indent: str) -> None:
    answering = f" {message['tool_call_id']}" if message.get("tool_call_id") else ""
    role = styled(console(f"[{message['role']}{answering}]"), fg="blue")
    for call in message.get("tool_calls") or []:
        function = call["function"]
        styled_line(indent, role, " ", console(_short(f"calls {function['name']}({function['arguments']})")))
    if message.get("tool_calls") and message["content"] is None:
        return
    if message["role"] == "assistant" and message["content"] is None:
        variable = f" (variable {message['variable']})" if message.get("variable") else ""
        styled_line(indent, role, " ", styled(f"<the model's response{variable}>", dim=True))
        return
    text = console(_short(message["content"] or ""))
    marked = SHOWN_PARAMETER.sub(lambda m: click.style(m.group(), fg="cyan"), text)  # the parameters to fill
    image = f" (image: {console(message['image_url'])})" if message.get("image_url") else ""
    styled_line(indent, role, " ", marked, image)


def _verdict(passed: bool | None) -> str:
    if passed is None:  # the output could not be judged
        return styled("invalid", fg="yellow")
    return styled("safe", fg="green") if passed else styled("unsafe", fg="red")


def _print(view: dict[str, Any]) -> None:
    styled_line(styled(view["path"], bold=True))
    if view.get("id"):
        _field("id", view["id"])
    _field("description", view["description"] or "(none)")
    _field("model", view["model"] or "(none)")
    args = ", ".join(f"{name}={json.dumps(value)}" for name, value in view["checker"]["args"].items())
    _field("checker", f"{view['checker']['name']}({args})")
    _print_prompt(view)
    _print_tools(view)
    if view["default_model_args"]:
        _field("model args", ", ".join(f"{k}={json.dumps(v)}" for k, v in view["default_model_args"].items()))
    tags = ", ".join(f"{t.get('name')}={t.get('value')}" for t in view["tags"] if isinstance(t, dict))
    _field("tags", tags or "(none)")
    _field("author", view["author"] or "(none)")
    _print_instance_files(view)
    for instance in view["instances"]:
        _print_instance(instance)


def _print_prompt(view: dict[str, Any]) -> None:
    """The prompt's messages (each run's, for a multi-run prompt) and the parameters they take."""
    styled_line("  ", styled("prompt:", bold=True))
    if view["prompt"]["runs"] is not None:
        for run in view["prompt"]["runs"]:
            styled_line("    ", console(f"run {run['name']} x{run['repetitions']}:"))
            for message in run["messages"]:
                _message(message, " " * 6)
    for message in view["prompt"]["messages"] or []:
        _message(message, " " * 4)
    _field("parameters", ", ".join(view["prompt_parameters"]) or "(none)")


def _print_tools(view: dict[str, Any]) -> None:
    """The tools the model is offered, what each returns, and the tool steps allowed."""
    for tool in view.get("tools") or []:
        arguments = ", ".join(tool["parameters"].get("properties") or {})
        declared = tool["returns"]
        if isinstance(declared, list):  # cases chosen by the arguments
            declared = "; ".join(ReturnCase(**case).text for case in declared)
        returns = f" returns {_short(declared)}" if declared is not None else ""
        _field("tool", f"{tool['name']}({arguments}){returns}")
    if view.get("max_tool_steps") is not None:
        never = ": calls are recorded, never answered" if view["max_tool_steps"] == 0 else ""
        _field("tool steps", f"at most {view['max_tool_steps']} per turn{never}")


def _judged(counts: dict[str, Any]) -> str:
    invalid = f", {counts['invalid']} invalid" if counts["invalid"] else ""
    return f"{counts['safe']} safe, {counts['unsafe']} unsafe{invalid}"


def _print_instance_files(view: dict[str, Any]) -> None:
    """The instances in all, then each instance file's verdicts and unreadable lines."""
    files = view["instance_files"]
    totals = {verdict: sum(f[verdict] for f in files) for verdict in ("safe", "unsafe", "invalid")}
    _field("instances", f"{count(sum(totals.values()), 'instance')} ({_judged(totals)})")
    for item in files:
        unreadable = f", {count(item['unreadable_lines'], 'bad line')}" if item["unreadable_lines"] else ""
        shown = item["file"].removeprefix(view["path"] + "/")  # the file within the LVE
        styled_line("    ", console(f"{shown}: {_judged(item)}{unreadable}"))


def _print_instance(instance: dict[str, Any]) -> None:
    """One instance: where it is, its verdict, its args and response, and what a judge model said."""
    args = ", ".join(f"{k}={json.dumps(v)}" for k, v in (instance.get("args") or {}).items())
    where = f"{instance['file'].rsplit('/', 1)[-1]}:{instance['line']}"
    styled_line(
        "    ",
        console(where),
        " ",
        _verdict(passed if (passed := instance.get("passed", True)) is None else passed is True),
        console(f" args: {args or '(none)'}; response: {_short(instance.get('response'))}"),
    )
    said = judge_said(instance.get("judgement"))
    if said is not None:
        styled_line("      ", console(f"judged by {_short(said)}"))


@click.command("show", short_help=short_help("show"))
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "--instances",
    "instances",
    type=click.IntRange(0),
    default=3,
    show_default=True,
    help="Instances to show.",
)
@format_option
@repo_option
def show_command(path: Path, instances: int, output_format: str, repo_path: Path | None) -> int:
    """Show one LVE: description, model, checker and its arguments, the prompt (each message with its role,
    placeholders marked), parameters, tags, author, instance counts per file and the first instances.

    PATH is the LVE's folder or a file inside it. Colours on a terminal only (none with NO_COLOR set). Of a
    withheld LVE, only its public abstract and when its payload is to be disclosed.

    \b
    Examples:
      lvegit show repository/reliability/arithmetic/multiply/openai--gpt-4o-mini
      lvegit show repository/privacy/identifiers/iban_generation/openai--gpt-4o-mini --instances 0
      lvegit show repository/bias/gender/job_advert/openai--gpt-4o-mini --format json
      lvegit show LVE-2026-0005
    """
    repo = open_repository(repo_path)
    selected = repo.select(resolve_ids(repo, [path]), False, withheld=True)
    if len(selected) != 1:
        found = f"holds {count(len(selected), 'LVE')}" if selected else "is no LVE"
        raise UsageError(f"{path} {found}: show takes one LVE's folder (lvegit list shows them)")
    if is_withheld(selected[0]):  # its abstract only, whatever identity this process holds
        from lvegit.disclosure.withheld import public_view

        withheld = public_view(repo, selected[0])
        if output_format == "json":
            print_json(withheld)
        else:
            for name, value in withheld.items():
                _field(name, ", ".join(map(str, value)) if isinstance(value, list) else str(value))
        return 0
    view = lve_view(repo, selected[0], instances)
    if output_format == "json":
        print_json(view)
    else:
        _print(view)
    return 0
