from __future__ import annotations

import sys
from pathlib import Path

import click

from lvegit.attempt import Attempt, Report
from lvegit.commands.catalog import short_help
from lvegit.errors import EXIT_FINDINGS, EXIT_OK, UsageError
from lvegit.models.routing import ModelPool
from lvegit.options import Selection, format_option, open_repository, repo_option, selection_options
from lvegit.output import line, print_json
from lvegit.rerun import InstanceResult, by_instance, in_shard, parse_shard, plan_reruns, wilson_interval
from lvegit.runner import RetryPolicy, Runner


def _verdict(passed: bool | None) -> str:
    return {True: "safe", False: "unsafe", None: "?"}[passed]


def _describe(result: InstanceResult) -> str:
    where = f"{result.file}:{result.line}"
    text = f"{where}  recorded {_verdict(result.recorded)}"
    if result.verdicts:
        text += "  new: " + ", ".join(_verdict(v) for v in result.verdicts)
        if len(result.verdicts) > 1:
            low, high = wilson_interval(result.unsafe, len(result.verdicts))
            text += f"  ({result.unsafe}/{len(result.verdicts)} unsafe, 95% CI {low:.0%}-{high:.0%})"
        text += "  agrees" if result.agree else "  DISAGREES"
    for error in result.errors:
        text += f"  error: {error}"
    return text


@click.command("run", short_help=short_help("run"))
@selection_options
@click.option(
    "--repeat",
    type=click.IntRange(1, 1000),
    default=1,
    show_default=True,
    help="Run each instance N times; reports how often it is unsafe (95% Wilson interval).",
)
@click.option(
    "--concurrency",
    type=click.IntRange(1, 1024),
    default=8,
    show_default=True,
    help="Attempts in flight at once.",
)
@click.option("--model", "model", help="Run against this model instead of each LVE's own (carry LVEs over).")
@click.option("--append", is_flag=True, help="Append each new result to the instance file it came from.")
@click.option("--author", help="The author recorded in appended instances.")
@click.option(
    "--report",
    "report_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write every attempt to this JSONL file.",
)
@click.option("--resume", is_flag=True, help="Continue the run of --report FILE, skipping finished attempts.")
@click.option("--shard", help="Run only shard I of N (for example 2/4), split deterministically by LVE.")
@click.option(
    "--retries",
    type=click.IntRange(0, 20),
    default=4,
    show_default=True,
    help="Retries of a request that failed transiently (429, 5xx, timeout, connection, bad body).",
)
@format_option
@repo_option
def run_command(
    selection: Selection,
    repeat: int,
    concurrency: int,
    model: str | None,
    append: bool,
    author: str | None,
    report_path: Path | None,
    resume: bool,
    shard: str | None,
    retries: int,
    output_format: str,
    repo_path: Path | None,
) -> int:
    """Re-execute recorded instances against the model and compare the verdicts.

    Every instance is run with its recorded args (prompt parameters and model arguments), holes filled in
    order and every run of a multi-run prompt made; the checker judges each result. Models are routed by
    lvegit.toml (see the README); OPENAI_API_KEY / OPENAI_BASE_URL serve openai/... ids. Exit code 1 when
    a verdict differs from the recorded one or an attempt ends in an error.

    \b
    Examples:
      lvegit run repository/dummy/math/a_plus_b
      lvegit run --changed --base origin/main --repeat 5
      lvegit run --all --model openai/gpt-4o --concurrency 32 --report run.jsonl
      lvegit run --all --report run.jsonl --resume
      lvegit run --all --shard 2/4 --report shard-2.jsonl
    """
    if resume and report_path is None:
        raise UsageError("--resume needs --report FILE")
    repo = open_repository(repo_path)
    lve_dirs = selection.resolve(repo)
    if shard:
        index, count = parse_shard(shard)
        lve_dirs = [d for d in lve_dirs if in_shard(repo.relative(d), index, count)]
    report = Report(report_path, resume) if report_path is not None else None
    plan = plan_reruns(repo, lve_dirs, model, repeat, append)
    pool = ModelPool(repo.root)
    for model_id in sorted({task.attempt.model for task in plan.tasks}):
        pool.get(model_id)  # no route, no key: a usage error now, not an error per attempt
    runner = Runner(pool, concurrency, RetryPolicy(attempts=retries + 1), report, author)
    if output_format == "text" and sys.stderr.isatty() and plan.tasks:
        with click.progressbar(length=len(plan.tasks), label="running", file=sys.stderr) as bar:
            runner.on_finish = lambda _attempt: bar.update(1)
            attempts = runner.run(plan.tasks)
    else:
        attempts = runner.run(plan.tasks)
    return show_results(attempts, plan.invalid, output_format)


def show_results(attempts: list[Attempt], invalid: list[tuple[str, str]], output_format: str) -> int:
    """Per instance: recorded and new verdicts; exit 1 when one differs or an attempt failed."""
    results = by_instance(attempts)
    agree = sum(r.agree is True for r in results)
    disagree = sum(r.agree is False for r in results)
    errors = sum(bool(r.errors) for r in results)
    summary = {
        "instances": len(results),
        "attempts": len(attempts),
        "agree": agree,
        "disagree": disagree,
        "error": errors,
        "invalid_lves": len(invalid),
    }
    if output_format == "json":
        print_json(
            {
                "instances": [r.as_json() for r in results],
                "invalid": [{"lve": lve, "reason": reason} for lve, reason in invalid],
                "summary": summary,
            }
        )
    else:
        for result in results:
            line(_describe(result))
        for lve, reason in invalid:
            line(f"invalid: {lve}: {reason}")
        line(
            f"{len(results)} instances, {len(attempts)} attempts: {agree} agree, {disagree} disagree, "
            f"{errors} with errors"
        )
    return EXIT_FINDINGS if disagree or errors or invalid else EXIT_OK
