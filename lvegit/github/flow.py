"""The action's two stages.

check (untrusted, needs no secret): changed LVEs -> validate -> replay -> live re-run when a model is
reachable and allowed -> appended instances (work tree and a patch) -> results file -> job summary ->
annotations -> outputs -> exit code by the fail policy. In a pull request, the routing file and the run
history come from trusted refs, never from the pull request's work tree (lvegit.github.trust).

comment (trusted, checks out no pull-request code): the results file, schema-checked, must belong to the
pull request's current head; then the one verdict comment is created or edited in place.
"""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from lvegit.base.errors import UsageError
from lvegit.base.output import count, line
from lvegit.base.settings import CacheSettings, RetryPolicy, current
from lvegit.git.vcs import GitCheckout
from lvegit.github import results as results_file
from lvegit.github.api import PullRequests
from lvegit.github.commits import ensure_history
from lvegit.github.context import Event
from lvegit.github.render import SUMMARY_LIMIT, annotation_commands, render, write_outputs
from lvegit.github.review import review
from lvegit.github.trust import Trusted, for_pull_request
from lvegit.history.severity import impacts_of, severities
from lvegit.history.status import History, LVEStatus, status_table
from lvegit.history.store import HISTORY_DIR, history_dir
from lvegit.judge.cache import open_cache
from lvegit.judge.check import check_all
from lvegit.judge.results import CLAIMED, LVECheck
from lvegit.lve import ids
from lvegit.lve.repo import Repository, text_name
from lvegit.publish.readme import ReadmeError, readme_of
from lvegit.run.live import run_live


@dataclass(frozen=True)
class ActionSettings:
    """What the Action runs with: its inputs, GitHub's environment and the invocation's settings."""

    mode: str = "check"  # check | comment
    live: str = "auto"  # auto | true | false
    repeat: int = 1
    concurrency: int = 8
    fail_on: tuple[str, ...] = ("invalid", "mismatch", "error")
    append: bool = True
    comment: bool = False
    results_dir: Path = Path("lvegit-results")
    token: str = ""
    api_url: str = "https://api.github.com"
    server_url: str = "https://github.com"
    repository: str = ""
    workspace: Path = Path(".")
    summary_path: Path | None = None
    output_path: Path | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    cache: CacheSettings = field(default_factory=CacheSettings)


def _readme_warning(repo: Repository, path: str) -> str | None:
    """Why the LVE's README.md needs refreshing, or None. Checked against the work tree as the pull
    request left it, before the live re-run appends instances."""
    try:
        update = readme_of(repo, repo.root / path)
    except ReadmeError as exc:
        return f"README.md cannot be refreshed: {exc}"
    if not update.stale:
        return None
    return f"README.md is {'missing' if update.before is None else 'out of date'}: run lvegit readme {path}"


def _history(
    repo: Repository, folder: Path | None, paths: list[str]
) -> tuple[dict[str, list[LVEStatus]], dict[str, str], str | None]:
    """The status of these LVEs on each model of the run history in `folder`, by LVE; each one's severity
    (with the impact its test.json gives), in words, where some run gave a verdict; and why the history,
    or some of its files, could not be read (a broken or hostile file, each named): the check goes on with
    the others."""
    if folder is None or not folder.is_dir() or not paths:
        return {}, {}, None
    try:
        history = History.open(folder, partial=True)
        found = history.status(paths)
    except UsageError as exc:
        return {}, {}, str(exc)
    models = sorted({model for _lve, model in found})
    by_lve: dict[str, list[LVEStatus]] = {}
    for status in status_table(paths, models, found):
        by_lve.setdefault(status.lve, []).append(status)
    rated = severities(list(found.values()), impacts_of(repo, sorted({lve for lve, _model in found})))
    shown = {lve: severity.summary for lve, severity in rated.items()}
    problems = "; ".join(history.problems) or None
    return by_lve, {lve: text for lve, text in shown.items() if not text.startswith("unknown")}, problems


def _judge_claims_again(
    repo: Repository, checks: list[LVECheck], live: bool, trusted: Trusted | None, settings: ActionSettings
) -> tuple[list[LVECheck], str | None]:
    """In a pull request, what an LLM judge said about a recorded response is the contributor's claim:
    where the live stage can reach the judge, it is asked again and its verdicts replace the replayed
    ones; where not, the comment says that they are claims."""
    from lvegit.checkers.registry import needs_of
    from lvegit.lve.spec import load_lve

    judged = [
        check
        for check in checks
        if check.validation.valid
        and check.replay
        and (lve := load_lve(repo, repo.root / check.path)[0]) is not None
        and needs_of(lve.checker_name).judge_argument is not None
    ]
    if trusted is None or not judged:
        return checks, None
    if not live:
        claimed = {check.path for check in judged}
        marked = [
            replace(
                check,
                replay=[
                    replace(r, reason=CLAIMED) if r.status == "reproduced" and r.reason is None else r
                    for r in check.replay
                ],
            )
            if check.path in claimed
            else check
            for check in checks
        ]
        return marked, (
            "Judgements recorded in this pull request are the contributor's: no live stage asked "
            "their judges again."
        )
    from lvegit.models.routing import ModelPool
    from lvegit.run.rejudge import rejudge

    pool = ModelPool(repo.root, read=trusted.routing)
    again = rejudge(
        repo, [repo.root / check.path for check in judged], pool, settings.retry, settings.concurrency
    )
    by_line = {(r.file, r.line): r for results in again.values() for r in results}
    replaced = [
        replace(check, replay=[by_line.get((r.file, r.line), r) for r in check.replay]) for check in checks
    ]
    return replaced, "The judges of the LVEs judged by a model were asked again about each recorded response."


def check(repo: Repository, event: Event, settings: ActionSettings) -> int:
    with tempfile.TemporaryDirectory(prefix="lvegit-trusted-") as scratch:
        return _check(repo, event, settings, Path(scratch))


def _check(repo: Repository, event: Event, settings: ActionSettings, scratch: Path) -> int:
    revisions = [rev for rev in (event.base, event.head) if rev and rev != "HEAD"]
    checkout = GitCheckout(repo.root) if revisions else None
    for step in ensure_history(checkout, *revisions) if checkout else []:
        line(f"lvegit: {step}")
    changes = None
    if event.base:
        from lvegit.git.changes import changed_lves

        changes = changed_lves(repo, event.base, event.head)
        # a removed folder's name is only shown: as text, whatever bytes it had
        paths, removed = changes.changed, [text_name(path) for path in changes.removed]
    else:
        paths, removed = [repo.relative(d) for d in repo.lve_dirs()], []
    lve_dirs = [repo.root / path for path in paths if (repo.root / path).is_dir()]
    cache, unused = open_cache(repo.root, settings.cache)
    if cache is not None and event.pull_request is not None:
        # A pull request's check reads verdicts that trusted runs stored and never stores its own.
        cache.writable = False
    if unused:
        line(f"lvegit: verdict cache: {unused}")
    checks = check_all(repo, lve_dirs, cache)
    readmes = {check.path: _readme_warning(repo, check.path) for check in checks if check.validation.valid}
    if cache is not None:
        cache.prune()
    runnable = [d for d, check in zip(lve_dirs, checks, strict=True) if check.validation.valid]
    history_folder = repo.root / (current().history.directory or HISTORY_DIR)  # no link followed
    trusted: Trusted | None = None
    if checkout is not None and changes is not None and event.base and event.head:
        trusted = for_pull_request(
            checkout, repo.root, event.base, changes.base, event.head, history_folder, scratch / "history"
        )
    live = run_live(
        repo,
        runnable,
        settings.live,
        settings.repeat,
        settings.append,
        settings.concurrency,
        settings.retry,
        trusted.routing if trusted else None,
    )
    checks, judged_note = _judge_claims_again(repo, checks, live.enabled, trusted, settings)
    reviewed = review(repo, changes) if changes is not None else {}
    try:
        trusted_history = (
            trusted.history if trusted else history_dir(repo.root, None, current().history.directory)
        )
        paths = [check.path for check in checks]
        statuses, severity, history_problem = _history(repo, trusted_history, paths)
    except UsageError as exc:
        statuses, severity, history_problem = {}, {}, str(exc)
    known_ids = _ids(repo, trusted)
    lves = [
        results_file.lve_record(
            check,
            live.instances.get(check.path, []),
            live.appended.get(check.path, []),
            reviewed.get(check.path),
            readmes.get(check.path),
            statuses.get(check.path),
            known_ids.get(check.path),
            severity.get(check.path),
        )
        for check in checks
    ]
    results = results_file.document(
        lves,
        removed,
        results_file.LiveSetting(enabled=live.enabled, reason=live.reason),
        settings.fail_on,
        repository=settings.repository,
        event=event.name,
        pull_request=event.pull_request,
        base_sha=event.base,
        head_sha=event.head,
        history=history_problem,
        trust=(trusted.notes if trusted else []) + ([judged_note] if judged_note else []),
    )
    if trusted is not None and trusted.refusals:
        failures = [*results.failures, *trusted.refusals]
        results = results.model_copy(update={"failures": failures, "passed": False})
    totals = results.totals
    results_path = settings.results_dir / "results.json"
    results_file.write(results_path, results)
    appended_files = sorted({a.file for lve in lves for a in lve.appended})
    if appended_files:  # the appended instances as a patch, for maintainers to apply (the work tree has them)
        patch = (checkout or GitCheckout(repo.root)).patch([str(repo.root / f) for f in appended_files])
        results_file.write_in_folder(settings.results_dir / "instances.patch", patch)
    if settings.summary_path is not None:
        with settings.summary_path.open("a", encoding="utf-8") as handle:
            handle.write(render(results, settings.server_url, SUMMARY_LIMIT, marker=False) + "\n")
    root, workspace = repo.root.resolve(), settings.workspace.resolve()
    prefix = (
        f"{root.relative_to(workspace).as_posix()}/" if workspace in root.parents else ""
    )  # paths in the repo
    for command in annotation_commands(results, prefix, settings.fail_on):
        sys.stdout.write(command + "\n")
    if settings.output_path is not None:
        write_outputs(
            settings.output_path,
            {
                "changed": " ".join(map(text_name, paths)),
                "reproduced": str(totals.reproduced),
                "mismatch": str(totals.mismatch),
                "error": str(totals.error),
                "invalid": str(totals.invalid),
                "results-file": str(results_path),
                "passed": str(results.passed).lower(),
            },
        )
    verdict = "passed" if results.passed else "failed: " + "; ".join(results.failures)
    line(f"lvegit: {count(len(lves), 'changed LVE')}; {verdict}")
    if settings.comment and event.pull_request is not None:
        post_comment(results, settings, event.pull_request, event.head)
    return 0 if results.passed else 1


def post_comment(
    results: results_file.ResultsDocument, settings: ActionSettings, number: int, expected_head: str | None
) -> None:
    api = PullRequests(settings.api_url, settings.token, settings.repository, settings.retry)
    current = api.head_sha(number)
    if results.head_sha != current or (expected_head and expected_head != current):
        line(
            f"lvegit: the results are for {results.head_sha[:12]}, but #{number} is at {current[:12]} now: "
            "not commenting (a newer run will)"
        )
        return
    action, comment_id = api.upsert_comment(number, render(results, settings.server_url))
    line(f"lvegit: {action} comment {comment_id} on #{number}")


def comment(event: Event, settings: ActionSettings) -> int:
    results = results_file.load(settings.results_dir / "results.json")
    if results.repository != settings.repository:
        raise UsageError(f"the results file is for {results.repository!r}, not {settings.repository!r}")
    number = event.pull_request or results.pull_request
    if number is None:
        line("lvegit: no pull request to comment on")
        return 0
    post_comment(results, settings, number, event.head)
    return 0


def environment_settings(workspace: Path) -> dict[str, Any]:
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    outputs = os.environ.get("GITHUB_OUTPUT")
    return {
        "api_url": os.environ.get("GITHUB_API_URL", "https://api.github.com"),
        "server_url": os.environ.get("GITHUB_SERVER_URL", "https://github.com"),
        "repository": os.environ.get("GITHUB_REPOSITORY", ""),
        "workspace": workspace,
        "summary_path": Path(summary) if summary else None,
        "output_path": Path(outputs) if outputs else None,
    }


def _ids(repo: Repository, trusted: Trusted | None) -> dict[str, str]:
    """Each LVE path's id: from the base commit's lve-ids.json in a pull request (which may not set one),
    else from the work tree's; none where the registry cannot be read (the check says so elsewhere)."""
    try:
        if trusted is None:
            return ids.live_ids(repo)
        text = trusted.routing(ids.REGISTRY)
        return ids.parse(text).live() if text is not None else {}
    except UsageError:
        return {}
