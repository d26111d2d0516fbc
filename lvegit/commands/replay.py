from __future__ import annotations

from pathlib import Path

import click

from lvegit.cache import open_cache
from lvegit.commands.catalog import short_help
from lvegit.errors import EXIT_FINDINGS, EXIT_OK
from lvegit.options import Selection, format_option, open_repository, repo_option, selection_options
from lvegit.output import count, line, note, print_json
from lvegit.problems import location
from lvegit.replay import ReplayResult, replay_all, replay_stream, summarize


@click.command("replay", short_help=short_help("replay"))
@selection_options
@click.option(
    "--no-cache",
    is_flag=True,
    help="Judge every instance again instead of reading verdicts of unchanged checkers and responses from "
    ".lvegit-cache/ (LVEGIT_CACHE_DIR moves it, LVEGIT_CACHE=read or off limits it).",
)
@format_option
@repo_option
def replay_command(
    selection: Selection,
    no_cache: bool,
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
    """
    repo = open_repository(repo_path)
    cache, unused = open_cache(repo.root, enabled=not no_cache)
    if unused:
        note(f"verdict cache: {unused}")
    lve_dirs = selection.resolve(repo)
    if output_format == "json":
        results = replay_all(repo, lve_dirs, cache)
        summary = summarize(results)
        print_json({"instances": [r.as_json() for r in results], "summary": summary})
    else:
        results = []
        for lve_dir, judged in replay_stream(repo, lve_dirs, cache):  # each LVE as soon as it is done
            results.extend(judged)
            _show(repo.relative(lve_dir), judged)
        summary = summarize(results)
        line(f"{count(len(lve_dirs), 'LVE')}: {_counts(summary, every=True)}")
    if cache is not None:
        cache.prune()
    return EXIT_FINDINGS if summary["mismatch"] or summary["error"] else EXIT_OK


def _counts(summary: dict[str, int], every: bool = False) -> str:
    """`3 reproduced, 1 mismatch`: the statuses that occur (all of them with `every`)."""
    forms = {
        "reproduced": ("reproduced", "reproduced"),
        "mismatch": ("mismatch", "mismatches"),
        "skipped": ("skipped", "skipped"),
        "error": ("error", "errors"),
    }
    return ", ".join(count(number, *forms[status]) for status, number in summary.items() if number or every)


def _show(lve: str, results: list[ReplayResult]) -> None:
    """One LVE: what its instances came to, then a line for each that did not reproduce."""
    line(f"{lve}: {_counts(summarize(results)) if results else 'no instances'}")
    for group in _grouped(results):
        result = group[0]
        if len(group) > 1:  # skipped for one reason: once per LVE
            line(f"  skipped: {count(len(group), 'instance')}: {result.reason}")
            continue
        where = location(result.file, result.line)
        reason = result.reason
        if result.status == "mismatch":
            detail = f"recorded passed={result.recorded}, replayed passed={result.replayed}"
            reason = f"{detail} ({result.reason})" if result.reason else detail
        line(f"  {result.status}: {where}: {reason}")


def _grouped(results: list[ReplayResult]) -> list[list[ReplayResult]]:
    """The results worth a line: each on its own, except that an LVE's instances skipped for the same
    reason (a checker model that is not available, say) form one group."""
    groups: list[list[ReplayResult]] = []
    skipped: dict[tuple[str, str | None], list[ReplayResult]] = {}
    for result in results:
        if result.status == "reproduced":
            continue
        if result.status != "skipped":
            groups.append([result])
        elif (result.lve, result.reason) in skipped:
            skipped[(result.lve, result.reason)].append(result)
        else:
            groups.append(skipped.setdefault((result.lve, result.reason), [result]))
    return groups
