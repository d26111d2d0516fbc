from __future__ import annotations

from pathlib import Path

import click

from lvegit.base.errors import EXIT_FINDINGS, EXIT_OK
from lvegit.base.output import count, line, note, print_json
from lvegit.commands.catalog import short_help
from lvegit.commands.lines import replay_lines, replay_status
from lvegit.commands.options import (
    Selection,
    current_settings,
    lve_command_options,
    open_repository,
)
from lvegit.judge.cache import open_cache
from lvegit.judge.replay import replay_all, replay_stream
from lvegit.judge.results import ReplayResult, invalid_verdicts, replay_counts, summarize


@click.command("replay", short_help=short_help("replay"))
@lve_command_options(
    click.option(
        "--report",
        "report_path",
        type=click.Path(path_type=Path, dir_okay=False),
        help="Also write each instance's outcome as an attempt record to FILE, replacing it (the JSONL of "
        "run --report), for lvegit export, report and site.",
    ),
    click.option(
        "--rejudge",
        is_flag=True,
        help="Ask the judge of each LVE judged by a model (LLMJudgeChecker) again, live, and compare its "
        "verdict with the recorded one; the other LVEs replay as usual.",
    ),
    cache=True,
)
def replay_command(
    selection: Selection,
    no_cache: bool,
    report_path: Path | None,
    rejudge: bool,
    output_format: str,
    repo_path: Path | None,
) -> int:
    """Re-check recorded instances with their LVE's checker, offline (no model is called).

    Each instance ends as reproduced (same verdict as recorded), mismatch, skipped (with the reason, e.g.
    the checker needs a model) or error. Each LVE's line prints as soon as it is judged (those whose
    checker loads a model last), with a line for every instance that did not reproduce. Exit code 1 on any
    mismatch or error. Verdicts are cached by
    content (checker, its arguments and code or model, prompt, stored response, lvegit's version): an
    unchanged instance is not judged again, and its checker is not even built.

    \b
    Examples:
      lvegit replay --all
      lvegit replay repository/reliability/arithmetic --format json
      lvegit replay --changed --base origin/main
      lvegit replay --all --report replay.jsonl
      lvegit replay repository/security --rejudge
    """
    repo = open_repository(repo_path)
    cache, unused = open_cache(repo.root, current_settings().cache, enabled=not no_cache)
    if unused:
        note(f"verdict cache: {unused}")
    lve_dirs = selection.resolve(repo)
    if report_path is not None:
        from lvegit.run.replay_report import check_replay_report

        check_replay_report(report_path)
    rejudged: dict[Path, list[ReplayResult]] = {}
    if rejudge:
        from lvegit.models.routing import ModelPool
        from lvegit.run.rejudge import rejudge as judge_again

        rejudged = judge_again(repo, lve_dirs, ModelPool(repo.root), current_settings().retry)
    replayed = [d for d in lve_dirs if d not in rejudged]
    if output_format == "json":
        results = replay_all(repo, replayed, cache) + [r for d in lve_dirs for r in rejudged.get(d, [])]
        summary = summarize(results)
        from lvegit.judge.records import replay_document  # pydantic: only for the JSON document

        print_json(replay_document(results))
    else:
        results = []
        # each LVE as soon as it is done; those judged again come last
        for lve_dir, judged in [*replay_stream(repo, replayed, cache), *rejudged.items()]:
            results.extend(judged)
            line(f"{repo.relative(lve_dir)}: {replay_status(judged)}")
            for detail in replay_lines(judged):
                line(detail)
        summary = summarize(results)
        line(
            f"{count(len(lve_dirs), 'LVE')}: {replay_counts(summary, every=True)}{invalid_verdicts(results)}"
        )
    if cache is not None:
        cache.prune()
    if report_path is not None:
        from lvegit.run.replay_report import write_replay_report

        command = " ".join(["lvegit", *current_settings().argv])
        write_replay_report(repo, results, report_path, command)
    return EXIT_FINDINGS if summary["mismatch"] or summary["error"] else EXIT_OK
