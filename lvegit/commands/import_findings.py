from __future__ import annotations

from collections import Counter
from pathlib import Path

import click

from lvegit.base.escape import console
from lvegit.base.output import count, line, note
from lvegit.commands.catalog import short_help
from lvegit.commands.options import SuggestingGroup, open_repository, repo_option
from lvegit.findings.drafts import Draft, Scan, write_drafts

_SOURCE = click.Path(exists=True, dir_okay=False, path_type=Path)


def _options(function: click.decorators.FC) -> click.decorators.FC:
    function = click.option("--author", help="The author of the drafts and their instances.")(function)
    function = click.option(
        "--category",
        default="imported",
        show_default=True,
        help="Where the drafts go: repository/CATEGORY/PROBE/MODEL.",
    )(function)
    return repo_option(function)


@click.group("import", cls=SuggestingGroup, short_help=short_help("import"))
def import_command() -> None:
    """Turn a scanner's findings into LVE drafts: each failing attempt of a garak report or of a promptfoo
    evaluation becomes an instance (passed false) of an LVE per probe (or plugin) and model, with the prompt
    and its parameters, a checker where one fits (a regex, an LLM judge) or a placeholder that names the
    scanner's detector, and the source (tool, version, run id). import never writes into an existing LVE:
    a draft whose folder exists is refused, naming it, unless that folder holds its findings already (the
    same scan imported again). Then `lvegit validate` says what is left to fill in.

    \b
    Examples:
      lvegit import garak examples/findings/garak.report.jsonl
      lvegit import promptfoo examples/findings/promptfoo-results.json --category support
    """


def _report(
    scan: Scan,
    drafts: list[Draft],
    read: str,
    author: str | None,
    repo_path: Path | None,
    unchanged: str = "holds every finding of this scan already",
    left: str = "output",
) -> int:
    """Write the drafts of `scan`, of whose `read` (what it counts) the summary says how many were read;
    `unchanged`: what a draft whose LVE exists already is; `left`: what the scan leaves out (each named
    where it is no output)."""
    repo = open_repository(repo_path)
    done = write_drafts(repo, drafts, author)
    for rel in done.written:
        line(f"wrote {console(rel)}")
    for rel in done.unchanged:
        note(f"{rel} {unchanged}: left as it is")
    instances = sum(len(d.instances) for d in drafts if d.rel in done.written)
    drafted = count(len(done.written), "LVE draft")
    line(f"{drafted} with {count(instances, 'instance')} from {count(scan.read, read)} of {scan.tool}")
    reasons = Counter(item.reason for item in scan.left_out)
    for reason, times in reasons.most_common():
        if left == "output":
            note(f"{count(times, left)} left out: {reason}")
        else:
            named = ", ".join(item.what for item in scan.left_out if item.reason == reason)
            note(f"{count(times, left)} left out ({named}): {reason}")
    if done.written:
        line(f"next: lvegit validate {' '.join(console(rel) for rel in done.written[:3])}")
    return 0


@import_command.command("garak")
@click.argument("report", type=_SOURCE)
@_options
def garak_command(report: Path, category: str, author: str | None, repo_path: Path | None) -> int:
    """Draft LVEs from a garak report (garak's report.jsonl): each output a detector scored 0.5 or more.

    \b
    Examples:
      lvegit import garak garak.report.jsonl
      lvegit import garak garak.report.jsonl --category security --author alice
    """
    from lvegit.findings import garak

    folder = _segment(category)  # refused before the report is read
    run = garak.read_report(report)
    return _report(run, garak.drafts(run, folder), "evaluated attempt", author, repo_path)


@import_command.command("promptfoo")
@click.argument("results", type=_SOURCE)
@_options
def promptfoo_command(results: Path, category: str, author: str | None, repo_path: Path | None) -> int:
    """Draft LVEs from promptfoo's results JSON (promptfoo eval --output results.json): each failing result.

    \b
    Examples:
      lvegit import promptfoo results.json
      lvegit import promptfoo redteam-results.json --category security
    """
    from lvegit.findings import promptfoo

    folder = _segment(category)
    evaluation = promptfoo.read_results(results)
    return _report(evaluation, promptfoo.drafts(evaluation, folder), "result", author, repo_path)


@import_command.command("agentdojo")
@click.option("--suite", required=True, help="AgentDojo's suite: banking, slack, travel or workspace.")
@click.option(
    "--user-task",
    "user_tasks",
    multiple=True,
    metavar="ID",
    help="A user task of the suite, such as user_task_0 (repeatable; default: every one).",
)
@click.option(
    "--injection-task",
    "injection_tasks",
    multiple=True,
    metavar="ID",
    help="An injection task of the suite, such as injection_task_1 (repeatable; default: every one).",
)
@click.option(
    "--attack",
    default="important_instructions",
    show_default=True,
    help="AgentDojo's attack that writes the injection task's goal into the environment.",
)
@click.option("--model", required=True, help="The model the LVEs name (and the attack addresses).")
@click.option(
    "--benchmark-version", default="v1.2.2", show_default=True, help="AgentDojo's benchmark version."
)
@click.option("--author", help="The author of the drafts.")
@click.option(
    "--category",
    default="agentdojo",
    show_default=True,
    help="Where the drafts go: repository/CATEGORY/SUITE/USER_TASK-INJECTION_TASK/MODEL.",
)
@repo_option
def agentdojo_command(
    suite: str,
    user_tasks: tuple[str, ...],
    injection_tasks: tuple[str, ...],
    attack: str,
    model: str,
    benchmark_version: str,
    author: str | None,
    category: str,
    repo_path: Path | None,
) -> int:
    """Draft LVEs from an AgentDojo suite (the agentdojo package, 0.1.35: pip install 'lvegit[agentdojo]'):
    one per user task and injection task, with AgentDojo's environment, tools and checks copied into its
    environment/ folder and the attack's texts as its injections. The verdict is AgentDojo's security
    check, the utility its user task's; `lvegit record` runs them against the model.

    \b
    Examples:
      lvegit import agentdojo --suite banking --model openai/gpt-4o-2024-05-13
      lvegit import agentdojo --suite slack --user-task user_task_1 --model openai/gpt-4o-2024-05-13
    """
    from lvegit.findings import agentdojo
    from lvegit.publish.scaffold import check_model

    folder = _segment(category)
    loaded = agentdojo.load_suite(benchmark_version, suite)
    users = agentdojo.chosen(loaded.user_tasks, user_tasks, "user task")
    injections = agentdojo.chosen(loaded.injection_tasks, injection_tasks, "injection task")
    made, left_out = agentdojo.drafts(
        loaded, benchmark_version, users, injections, attack, check_model(model), folder
    )
    scan = Scan(f"AgentDojo's {suite} suite", left_out=left_out, read=len(users) * len(injections))
    pair = "user and injection task pair"
    return _report(scan, made, pair, author, repo_path, "is this import already", left=pair)


def _segment(category: str) -> str:
    from lvegit.publish.scaffold import parse_name

    return parse_name(f"{category}/x")[0]
