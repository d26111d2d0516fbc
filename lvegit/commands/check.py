from __future__ import annotations

from pathlib import Path

import click

from lvegit.base.errors import EXIT_FINDINGS, EXIT_OK
from lvegit.base.output import count, line, note, print_json
from lvegit.commands.catalog import short_help
from lvegit.commands.disclosure import identity_option
from lvegit.commands.lines import (
    finding_lines,
    replay_lines,
    replay_status,
    validation_status,
)
from lvegit.commands.options import (
    Selection,
    current_settings,
    lve_command_options,
    open_repository,
    strict_option,
)
from lvegit.disclosure.identity import load_identity
from lvegit.judge.cache import open_cache
from lvegit.judge.check import check_all, check_stream, opened_checks
from lvegit.judge.results import replay_counts, summarize


@click.command("check", short_help=short_help("check"))
@lve_command_options(strict_option, identity_option, cache=True)
def check_command(
    selection: Selection,
    strict: bool,
    identity_file: Path | None,
    no_cache: bool,
    output_format: str,
    repo_path: Path | None,
) -> int:
    """Validate LVEs and replay their recorded instances, each LVE loaded once: `lvegit validate` and
    `lvegit replay` in one pass.

    Each LVE gets one line (valid or not, and what its instances came to) as soon as it is done, then its
    findings and every instance that did not reproduce. Exit code 1 when an LVE is invalid or an instance
    ends in a mismatch or an error. With the verdict cache, an LVE whose folder is unchanged since a run
    that stored it is not loaded again. A withheld LVE is validated without any key and its replay
    skipped; with a disclosure identity (--identity or LVEGIT_DISCLOSURE_IDENTITY) it is decrypted into a
    private scratch folder and replayed there, its findings shown without their messages.

    \b
    Examples:
      lvegit check --all
      lvegit check repository/reliability/arithmetic --strict
      lvegit check --changed --base origin/main --format json
    """
    repo = open_repository(repo_path)
    cache, unused = open_cache(repo.root, current_settings().cache, enabled=not no_cache)
    if unused:
        note(f"verdict cache: {unused}")
    lve_dirs = selection.resolve(repo, withheld=True)
    identity = load_identity(identity_file)
    opened = opened_checks(repo, lve_dirs, identity, strict) if identity is not None else None
    if output_format == "json":
        checks = check_all(repo, lve_dirs, cache, strict, opened)
    else:
        checks = []
        for _lve_dir, check in check_stream(repo, lve_dirs, cache, strict, opened):  # as soon as it is done
            checks.append(check)
            report = check.validation
            line(f"{check.path}: {validation_status(report)}; {replay_status(check.replay, report.valid)}")
            for detail in (*finding_lines(report), *replay_lines(check.replay)):
                line(detail)
    if cache is not None:
        cache.prune()
    if output_format == "json":
        from lvegit.judge.records import check_document  # pydantic: only for the JSON document

        print_json(check_document(checks).model_dump(mode="json", by_alias=True))
    else:
        invalid = sum(not check.validation.valid for check in checks)
        counts = replay_counts(summarize([result for check in checks for result in check.replay]), every=True)
        line(f"{count(len(checks), 'LVE')}: {len(checks) - invalid} valid, {invalid} invalid; {counts}")
    return EXIT_OK if all(check.passed for check in checks) else EXIT_FINDINGS
