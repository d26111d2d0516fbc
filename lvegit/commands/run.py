from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path

import click

from lvegit.base.errors import Interrupted, UsageError
from lvegit.base.output import note
from lvegit.batch.api import Polling
from lvegit.batch.engines import BatchOptions, check_routes, run_batches
from lvegit.batch.rounds import Rounds
from lvegit.commands.catalog import short_help
from lvegit.commands.options import (
    Selection,
    current_settings,
    lve_command_options,
    open_repository,
)
from lvegit.models.base import DEFAULT_CONCURRENCY
from lvegit.models.routing import ModelPool
from lvegit.run.attempt import Report
from lvegit.run.outcome import ResultsOutput, show_results
from lvegit.run.rerun import Outcomes, in_shard, iter_tasks, parse_shard
from lvegit.run.routes import Routing
from lvegit.run.runner import Recorder, Runner, Task


@click.command("run", short_help=short_help("run"))
@lve_command_options(
    click.option(
        "--repeat",
        type=click.IntRange(1, 1000),
        default=1,
        show_default=True,
        help="Run each instance N times; reports how often it is unsafe (95% Wilson interval).",
    ),
    click.option(
        "--concurrency",
        type=click.IntRange(1, 1024),
        help="Attempts in flight at once per model (default: 8; for a local transformers model its "
        "batch_size, 32 unless the routing file says otherwise).",
    ),
    click.option(
        "--model", "model", help="Run against this model instead of each LVE's own (carry LVEs over)."
    ),
    click.option("--append", is_flag=True, help="Append each new result to the instance file it came from."),
    click.option("--author", help="The author recorded in appended instances."),
    click.option(
        "--report",
        "report_path",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Write every attempt to this JSONL file.",
    ),
    click.option(
        "--resume", is_flag=True, help="Continue the run of --report FILE, skipping finished attempts."
    ),
    click.option("--shard", help="Run only shard I of N (for example 2/4), split deterministically by LVE."),
    click.option(
        "--batch",
        "batch_api",
        is_flag=True,
        help="Send the requests through the Batch API of the model's OpenAI-compatible endpoint, in rounds "
        "(needs --report, which keeps the batch ids for --resume).",
    ),
    click.option(
        "--batch-out",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Write the requests of the next round to this batch input file (OpenAI batch format) and stop.",
    ),
    click.option(
        "--batch-in",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        multiple=True,
        help="Read answers from this batch output file (vllm run-batch, a Batch API download); repeatable: "
        "give every earlier round's output.",
    ),
    click.option(
        "--batch-fallback",
        type=click.Choice(["batch", "live"]),
        default="batch",
        show_default=True,
        help="Where a request that failed in a batch goes again: a follow-up batch, or a live request.",
    ),
    click.option(
        "--batch-poll",
        type=click.FloatRange(0, 3600),
        metavar="SECONDS",
        default=10.0,
        show_default=True,
        help="Seconds before the first look at a batch; each pause is half as long again, up to 10 minutes.",
    ),
    models=True,
)
def run_command(
    selection: Selection,
    repeat: int,
    concurrency: int | None,
    model: str | None,
    append: bool,
    author: str | None,
    report_path: Path | None,
    resume: bool,
    shard: str | None,
    batch_api: bool,
    batch_out: Path | None,
    batch_in: tuple[Path, ...],
    batch_fallback: str,
    batch_poll: float,
    device: str | None,
    dtype: str | None,
    retries: int,
    output_format: str,
    repo_path: Path | None,
) -> int:
    """Re-execute recorded instances against the model and compare the verdicts.

    Every instance is run with its recorded args (prompt parameters and model arguments), holes filled in
    order and every run of a multi-run prompt made; the checker judges each result. Models are routed by
    lvegit.toml (see the README); OPENAI_API_KEY / OPENAI_BASE_URL serve openai/... ids. Exit code 1 when
    a verdict differs from the recorded one or an attempt ends in an error of its own, 4 when attempts
    failed only on the model's service. With --model (a scan: the recordings are another model's), exit
    code 1 when an LVE reproduced (an unsafe verdict), 4 when none did but something could not be run or
    judged, 0 when none did (clean).

    \b
    Examples:
      lvegit run repository/reliability/arithmetic/multiply
      lvegit run --changed --base origin/main --repeat 5
      lvegit run --all --model openai/gpt-4o --concurrency 32 --report run.jsonl
      lvegit run --all --model openai/gpt-4o --report run.jsonl --resume
      lvegit run --all --shard 2/4 --report shard-2.jsonl
      lvegit run --all --model openai/gpt-4o --batch --report carry.jsonl
      lvegit run repository/reliability --model openai/gpt-4o-mini --batch-out round-1.jsonl
    """
    if resume and report_path is None:
        raise UsageError("--resume needs --report FILE")
    batch = batch_options(batch_api, batch_out, batch_in, batch_fallback, batch_poll, report_path)
    repo = open_repository(repo_path)
    lve_dirs: Iterable[Path] = selection.stream(repo)
    if shard:
        index, total = parse_shard(shard)
        lve_dirs = (d for d in lve_dirs if in_shard(repo.relative(d), index, total))
    report = None
    if report_path is not None:  # its header names every selected LVE (--resume checks them)
        lve_dirs = list(lve_dirs)
        settings = {
            "lves": [repo.relative(d) for d in lve_dirs],
            "model": model,
            "repeat": repeat,
            "append": append,
            **({"batch": batch.mode} if batch.mode else {}),
        }
        report = Report(report_path, resume, settings, resume_command())
    pool = ModelPool(repo.root, device, dtype)
    routing = Routing(pool, files=batch.mode == "files")
    policy = replace(current_settings().retry, attempts=retries + 1)
    recorder = Recorder(report, author)
    invalid: list[tuple[str, str]] = []
    try:
        if batch.mode:  # a batch's rounds take the whole plan at once
            tasks = [t for t in iter_tasks(repo, lve_dirs, model, repeat, append, invalid) if routing.runs(t)]
            unroutable = routing.finish(invalid)
            check_routes(routing.routes, batch)
            rounds = Rounds(tasks, routing.routes, recorder, policy, batch.fallback_live)
            live = concurrency or DEFAULT_CONCURRENCY
            argv = list(current_settings().argv)
            left = run_batches(rounds, pool, batch, report, live, note, argv)
            summary = {
                "waiting": rounds.waiting,
                "problems": rounds.answers.problems,
                "unmatched": rounds.unmatched(),
                "next": left,
            }
            outcomes = Outcomes.of(rounds.attempts())
            return show_results(outcomes, invalid, output_format, unroutable, summary, model)
        planned = iter_tasks(repo, lve_dirs, model, repeat, append, invalid, keep_loaded=False)
        runner = Runner(pool, concurrency, policy, recorder)
        output = ResultsOutput(output_format, model)
        # each instance's result printed as it comes, unless the progress bar redraws on the same terminal
        on_terminal = sys.stdout.isatty() and sys.stderr.isatty()
        outcomes = Outcomes(emit=None if on_terminal else output.result)
        _run_with_progress(runner, (task for task in planned if routing.runs(task)), outcomes)
        unroutable = routing.finish(invalid)
    except KeyboardInterrupt:
        if report is None:
            raise
        pending = "; the batches go on at the server" if batch.api else ""
        raise Interrupted(
            f"interrupted; finished attempts are in {report_path}{pending}; continue with: {report.command}"
        ) from None
    return output.finish(outcomes, invalid, unroutable)


def batch_options(
    api: bool, output: Path | None, inputs: tuple[Path, ...], fallback: str, poll: float, report: Path | None
) -> BatchOptions:
    if api and (output is not None or inputs):
        raise UsageError(
            "--batch sends the requests through the Batch API; --batch-out and --batch-in are for offline "
            "engines: choose one"
        )
    if api and report is None:
        raise UsageError(
            "--batch needs --report FILE: the report keeps the batch ids, so that --resume can "
            "pick up the batches after an interruption instead of sending them again"
        )
    if fallback == "live" and not (api or output or inputs):
        raise UsageError("--batch-fallback applies to batch runs: add --batch (or --batch-out/--batch-in)")
    polling = Polling(first=poll, longest=max(poll, 600.0))
    return BatchOptions(api, inputs, output, fallback == "live", polling)


def resume_command() -> str:
    """The command line of this run with --resume: how to continue it."""
    argv = [arg for arg in current_settings().argv if arg != "--resume"]
    return shlex.join(["lvegit", *argv, "--resume"])


def _run_with_progress(runner: Runner, tasks: Iterator[Task], outcomes: Outcomes) -> None:
    """Run the tasks as they are planned, each attempt taken into `outcomes` as it ends. A progress bar on
    a terminal's stderr (whatever the output format), as wide as the terminal, its total growing as the
    plan is read."""

    def planned() -> Iterator[Task]:
        for task in tasks:
            outcomes.expect(task.attempt)  # results in the order of the plan
            yield task

    if not sys.stderr.isatty():
        runner.stream(planned(), outcomes.add)
        return
    columns = os.get_terminal_size(sys.stderr.fileno()).columns
    width = max(5, min(36, columns - 32 - 2 * 7))  # room for a count of up to seven digits, twice
    with click.progressbar(length=0, label="running", file=sys.stderr, width=width, show_pos=True) as bar:

        def counted() -> Iterator[Task]:
            for task in planned():
                bar.length = (bar.length or 0) + 1
                if bar.length & (bar.length - 1) == 0 or bar.length % 1024 == 0:
                    bar.render_progress()  # the total as it grows, while the first attempts are in flight
                yield task

        runner.recorder.on_finish = lambda _attempt: bar.update(1)
        runner.stream(counted(), outcomes.add)
