"""The action's two modes.

check (untrusted, needs no secret) is a list of stages over one CheckRun: the stages that find out
(FINDING: the commits, the changed LVEs, validation and replay with the verdict cache, trust, the live
re-run when a model is reachable and allowed, the judges asked again, the changes reviewed, the run
history), then the results, then the stages that report them (REPORTING: the results file, the appended
instances as a patch, the job summary, annotations, outputs, the comment); the exit code follows the fail
policy. In a pull request, the routing file, the run history and the ids come from trusted refs, never from
the pull request's work tree (lvegit.github.trust), chosen in one stage (_apply_trust).

comment (trusted, checks out no pull-request code): the results file, schema-checked, must belong to the
pull request's current head; then the one verdict comment is created or edited in place.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from lvegit.base.errors import UsageError
from lvegit.base.output import count, line
from lvegit.base.settings import CacheSettings, RetryPolicy, current
from lvegit.git.changes import Changes, changed_lves
from lvegit.git.vcs import GitCheckout
from lvegit.github import results as results_file
from lvegit.github.api import PullRequests
from lvegit.github.commits import ensure_history
from lvegit.github.context import Event
from lvegit.github.render import SUMMARY_LIMIT, annotation_commands, render, write_outputs
from lvegit.github.review import review
from lvegit.github.trust import Trusted, for_pull_request
from lvegit.github.verify import CHECK_WORKFLOW, ChangedFile, action_folders, doubts, runs_on_doubts
from lvegit.history.severity import impacts_of, severities
from lvegit.history.status import History, LVEStatus, status_table
from lvegit.history.store import HISTORY_DIR, history_dir
from lvegit.judge.cache import open_cache
from lvegit.judge.check import check_all
from lvegit.judge.results import CLAIMED, LVEChange, LVECheck
from lvegit.lve import ids
from lvegit.lve.repo import Repository, is_withheld, text_name
from lvegit.lve.routing_file import Reader
from lvegit.publish.readme import ReadmeError, readme_of
from lvegit.run.live import Live, run_live


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
    check_workflow: str = CHECK_WORKFLOW  # the base branch's check workflow, whose runs comment mode trusts
    lve_root: str = ""  # the LVE repository from the top of the repository ('' for the top itself)


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
    # named from the history folder (the trusted copy's lies in a temporary folder)
    problems = "; ".join(problem.removeprefix(f"{folder.parent}/") for problem in history.problems) or None
    return by_lve, {lve: text for lve, text in shown.items() if not text.startswith("unknown")}, problems


@dataclass
class CheckRun:
    """One run of the Action's check: what each stage found, for the stages after it."""

    repo: Repository
    event: Event
    settings: ActionSettings
    scratch: Path  # an empty folder, for the run history read from trusted refs
    checkout: GitCheckout | None = None  # None: no commit to compare (the work tree as it is)
    changes: Changes | None = None  # None: no base to compare with, every LVE is checked
    lve_dirs: list[Path] = field(default_factory=list)  # the changed LVEs that exist
    removed: list[str] = field(default_factory=list)  # the LVEs the changes removed, as text
    checks: list[LVECheck] = field(default_factory=list)  # validation and replay, by LVE
    readmes: dict[str, str | None] = field(default_factory=dict)  # why each README needs refreshing
    # What decides more than one LVE, and where the check read it (see _apply_trust)
    routing: Reader | None = None  # None: the work tree's routing file
    history_folder: Path | None = None
    history_problem: str | None = None  # why the run history, or part of it, could not be read
    known_ids: dict[str, str] = field(default_factory=dict)
    judgements_are_claims: bool = False  # a pull request's recorded judgements are its contributor's
    trust_notes: list[str] = field(default_factory=list)  # where a pull request's check read it from
    refusals: list[str] = field(default_factory=list)  # what fails the check whatever the policy
    live: Live = field(default_factory=lambda: Live(False, "not run"))
    reviewed: dict[str, LVEChange] = field(default_factory=dict)  # what the changes did to each LVE
    statuses: dict[str, list[LVEStatus]] = field(default_factory=dict)  # each LVE's run history
    severities: dict[str, str] = field(default_factory=dict)

    @property
    def paths(self) -> list[str]:
        """The changed LVEs that were checked."""
        return [check.path for check in self.checks]


def _fetch_commits(run: CheckRun) -> None:
    """The commits to compare, fetched where the checkout lacks them (or their history)."""
    revisions = [rev for rev in (run.event.base, run.event.head) if rev and rev != "HEAD"]
    if not revisions:
        return
    run.checkout = GitCheckout(run.repo.root)
    for step in ensure_history(run.checkout, *revisions):
        line(f"lvegit: {step}")


def _find_changed_lves(run: CheckRun) -> None:
    """The LVEs the event changed (every LVE where there is no base to compare with)."""
    repo = run.repo
    if run.event.base:
        run.changes = changed_lves(repo, run.event.base, run.event.head)
        paths = run.changes.changed
        run.removed = [text_name(path) for path in run.changes.removed]  # only shown: as text
    else:
        paths = [repo.relative(d) for d in repo.lve_dirs()]
    run.lve_dirs = [repo.root / path for path in paths if (repo.root / path).is_dir()]


def _ordinary(run: CheckRun) -> list[LVECheck]:
    """The checks of LVEs that are not withheld: a withheld one has no README and no run in a pull request."""
    return [check for check in run.checks if not is_withheld(run.repo.root / check.path)]


def _validate_and_replay(run: CheckRun) -> None:
    """Validate and replay the changed LVEs, with the verdicts of the cache; note where their READMEs need
    refreshing (the work tree as the pull request left it, before the live stage appends instances)."""
    cache, unused = open_cache(run.repo.root, run.settings.cache)
    if cache is not None and run.event.pull_request is not None:
        # A pull request's check reads verdicts that trusted runs stored and never stores its own.
        cache.writable = False
    if unused:
        line(f"lvegit: verdict cache: {unused}")
    run.checks = check_all(run.repo, run.lve_dirs, cache)
    run.readmes = {c.path: _readme_warning(run.repo, c.path) for c in _ordinary(run) if c.validation.valid}
    if cache is not None:
        cache.prune()


def _apply_trust(run: CheckRun) -> None:
    """Where the check reads what decides more than one LVE (the routing file, the run history, the ids):
    in a pull request from refs it cannot change (lvegit.github.trust), else from the work tree. The one
    stage that asks whether the check is a pull request's; the others read what it chose."""
    repo, event = run.repo, run.event
    if run.checkout is None or run.changes is None or not event.base or not event.head:  # no two commits
        try:
            run.history_folder = history_dir(repo.root, None, current().history.directory)
        except UsageError as exc:
            run.history_problem = str(exc)
        run.known_ids = _known_ids(repo, None)
        return
    history_folder = repo.root / (current().history.directory or HISTORY_DIR)  # no link followed
    trusted = for_pull_request(
        run.checkout,
        repo.root,
        event.base,
        run.changes.base,
        event.head,
        history_folder,
        run.scratch / "history",
    )
    run.routing, run.history_folder = trusted.routing, trusted.history
    run.known_ids = _known_ids(repo, trusted)
    run.judgements_are_claims = True
    run.trust_notes, run.refusals = trusted.notes, trusted.refusals


def _known_ids(repo: Repository, trusted: Trusted | None) -> dict[str, str]:
    """Each LVE path's id: from the base commit's lve-ids.json in a pull request (which may not set one),
    else from the work tree's; none where the registry cannot be read (the check says so elsewhere)."""
    try:
        if trusted is None:
            return ids.live_ids(repo)
        text = trusted.id_registry()
        return ids.parse(text).live() if text is not None else {}
    except UsageError:
        return {}


def _run_live(run: CheckRun) -> None:
    """Re-run the valid LVEs' instances against their models where a model is reachable and allowed."""
    settings = run.settings
    runnable = [run.repo.root / check.path for check in _ordinary(run) if check.validation.valid]
    run.live = run_live(
        run.repo,
        runnable,
        settings.live,
        settings.repeat,
        settings.append,
        settings.concurrency,
        settings.retry,
        run.routing,
    )


def _judged_by_a_model(run: CheckRun) -> list[LVECheck]:
    """The valid, replayed LVEs whose checker asks a judge model."""
    from lvegit.checkers.registry import needs_of
    from lvegit.lve.spec import load_lve

    return [
        check
        for check in run.checks
        if check.validation.valid
        and check.replay
        and (lve := load_lve(run.repo, run.repo.root / check.path)[0]) is not None
        and needs_of(lve.checker_name).judge_argument is not None
    ]


def _judge_claims_again(run: CheckRun) -> None:
    """In a pull request, what a judge model said about a recorded response is the contributor's claim:
    where the live stage can reach the judge, it is asked again and its verdicts replace the replayed
    ones; where not, the replayed verdicts are marked as claims and the comment says so."""
    judged = _judged_by_a_model(run) if run.judgements_are_claims else []
    if not judged:
        return
    if not run.live.enabled:
        claimed = {check.path for check in judged}
        run.checks = [_as_claims(check) if check.path in claimed else check for check in run.checks]
        run.trust_notes.append(
            "Judgements recorded in this pull request are the contributor's: no live stage asked "
            "their judges again."
        )
        return
    from lvegit.models.routing import ModelPool
    from lvegit.run.rejudge import rejudge

    repo, settings = run.repo, run.settings
    pool = ModelPool(repo.root, read=run.routing)
    again = rejudge(
        repo, [repo.root / check.path for check in judged], pool, settings.retry, settings.concurrency
    )
    by_line = {(r.file, r.line): r for results in again.values() for r in results}
    run.checks = [
        replace(check, replay=[by_line.get((r.file, r.line), r) for r in check.replay])
        for check in run.checks
    ]
    run.trust_notes.append(
        "The judges of the LVEs judged by a model were asked again about each recorded response."
    )


def _as_claims(check: LVECheck) -> LVECheck:
    """The check with each verdict its replay reproduced marked as a claim."""
    claimed = [
        replace(r, reason=CLAIMED) if r.status == "reproduced" and r.reason is None else r
        for r in check.replay
    ]
    return replace(check, replay=claimed)


def _review_changes(run: CheckRun) -> None:
    """What the changes did to each changed LVE."""
    if run.changes is not None:
        run.reviewed = review(run.repo, run.changes)


def _read_run_history(run: CheckRun) -> None:
    """Each LVE's status on each model of the run history, and its severity."""
    if run.history_problem is not None:
        return
    run.statuses, run.severities, run.history_problem = _history(run.repo, run.history_folder, run.paths)


# The stages that find out, in order: each reads what the ones before it set.
FINDING: Final[tuple[Callable[[CheckRun], None], ...]] = (
    _fetch_commits,
    _find_changed_lves,
    _validate_and_replay,
    _apply_trust,
    _run_live,
    _judge_claims_again,
    _review_changes,
    _read_run_history,
)


def _results(run: CheckRun) -> results_file.ResultsDocument:
    """The results document of what the stages found; what trust refuses fails it whatever the policy."""
    event, settings, live = run.event, run.settings, run.live
    lves = [
        results_file.lve_record(
            check,
            live.instances.get(check.path, []),
            live.appended.get(check.path, []),
            run.reviewed.get(check.path),
            run.readmes.get(check.path),
            run.statuses.get(check.path),
            run.known_ids.get(check.path),
            run.severities.get(check.path),
        )
        for check in run.checks
    ]
    results = results_file.document(
        lves,
        run.removed,
        results_file.LiveSetting(enabled=live.enabled, reason=live.reason),
        settings.fail_on,
        repository=settings.repository,
        event=event.name,
        pull_request=event.pull_request,
        base_sha=event.base,
        head_sha=event.head,
        history=run.history_problem,
        trust=run.trust_notes,
    )
    if run.refusals:
        failures = [*results.failures, *run.refusals]
        results = results.model_copy(update={"failures": failures, "passed": False})
    return results


def _write_results_file(run: CheckRun, results: results_file.ResultsDocument) -> None:
    results_file.write(run.settings.results_dir / "results.json", results)


def _write_patch(run: CheckRun, results: results_file.ResultsDocument) -> None:
    """The appended instances as a patch, for maintainers to apply (the work tree has them)."""
    appended_files = sorted({a.file for lve in results.lves for a in lve.appended})
    if appended_files:
        checkout = run.checkout or GitCheckout(run.repo.root)
        patch = checkout.patch([str(run.repo.root / f) for f in appended_files])
        results_file.write_in_folder(run.settings.results_dir / "instances.patch", patch)


def _write_summary(run: CheckRun, results: results_file.ResultsDocument) -> None:
    """The job summary: the comment, shortened to what a summary holds."""
    if run.settings.summary_path is not None:
        with run.settings.summary_path.open("a", encoding="utf-8") as handle:
            handle.write(render(results, run.settings.server_url, SUMMARY_LIMIT, marker=False) + "\n")


def _print_annotations(run: CheckRun, results: results_file.ResultsDocument) -> None:
    """An annotation for each problem, at its file's path in the workspace."""
    root, workspace = run.repo.root.resolve(), run.settings.workspace.resolve()
    prefix = f"{root.relative_to(workspace).as_posix()}/" if workspace in root.parents else ""
    for command in annotation_commands(results, prefix, run.settings.fail_on):
        sys.stdout.write(command + "\n")


def _write_outputs(run: CheckRun, results: results_file.ResultsDocument) -> None:
    """The step's outputs, for the workflow's later steps."""
    if run.settings.output_path is None:
        return
    totals = results.totals
    write_outputs(
        run.settings.output_path,
        {
            "changed": " ".join(map(text_name, run.paths)),
            "reproduced": str(totals.reproduced),
            "mismatch": str(totals.mismatch),
            "error": str(totals.error),
            "invalid": str(totals.invalid),
            "results-file": str(run.settings.results_dir / "results.json"),
            "passed": str(results.passed).lower(),
        },
    )


def _log_verdict(run: CheckRun, results: results_file.ResultsDocument) -> None:
    verdict = "passed" if results.passed else "failed: " + "; ".join(results.failures)
    line(f"lvegit: {count(len(results.lves), 'changed LVE')}; {verdict}")


def _comment(run: CheckRun, results: results_file.ResultsDocument) -> None:
    """The verdict comment on the pull request, where the Action's inputs ask for one; unverified where the
    pull request changes what its check runs on (the job that comments runs its workflow)."""
    if run.settings.comment and run.event.pull_request is not None:
        found = []
        if run.checkout is not None and run.changes is not None and run.event.head:
            changed = run.checkout.changed_files(run.changes.base, run.event.head)
            files = [
                ChangedFile(c.new_path or c.path, "renamed" if c.new_path else "modified", c.path)
                for c in changed
            ]
            tree = run.checkout.run(
                "ls-tree",
                "-r",
                "-z",
                "--name-only",
                "--full-tree",
                run.event.head,
                failure="cannot list the head",
            )
            actions = action_folders(tree.split("\0"))
            found = runs_on_doubts(files, run.checkout.relative(run.repo.root), actions)
        post_comment(results, run.settings, run.event.pull_request, run.event.head, found)


# The stages that report the results, in order.
REPORTING: Final[tuple[Callable[[CheckRun, results_file.ResultsDocument], None], ...]] = (
    _write_results_file,
    _write_patch,
    _write_summary,
    _print_annotations,
    _write_outputs,
    _log_verdict,
    _comment,
)


def check(repo: Repository, event: Event, settings: ActionSettings) -> int:
    """The check: the stages that find out, the results, the stages that report them; 1 when it failed."""
    results_path = settings.results_dir / "results.json"
    results_file.reserve(results_path)  # before any contributed code runs
    try:
        with tempfile.TemporaryDirectory(prefix="lvegit-trusted-") as scratch:
            run = CheckRun(repo, event, settings, Path(scratch))
            for find in FINDING:
                find(run)
            results = _results(run)
            for report in REPORTING:
                report(run, results)
    finally:
        results_file.discard(results_path)
    return 0 if results.passed else 1


def post_comment(
    results: results_file.ResultsDocument,
    settings: ActionSettings,
    number: int,
    expected_head: str | None,
    found: list[str],
) -> None:
    """Check mode's comment: its own results, for the head it checked; `found`: why it is unverified."""
    api = PullRequests(settings.api_url, settings.token, settings.repository, settings.retry)
    current = api.head_sha(number)
    if results.head_sha != current or (expected_head and expected_head != current):
        _stale(results.head_sha, number, current)
        return
    _upsert(api, number, render(results, settings.server_url, doubts=found))


def _stale(head: str, number: int, current: str) -> None:
    now = f"#{number} is at {current[:12]} now"
    line(f"lvegit: the results are for {head[:12]}, but {now}: not commenting (a newer run will)")


def _upsert(api: PullRequests, number: int, body: str) -> None:
    action, comment_id = api.upsert_comment(number, body)
    line(f"lvegit: {action} comment {comment_id} on #{number}")


def comment(event: Event, settings: ActionSettings) -> int:
    """Comment mode: the results artifact of a run of the check, relayed as the verdict comment, with what
    lvegit could not verify of it (lvegit.github.verify) said first."""
    results = results_file.load(settings.results_dir / "results.json")
    if results.repository != settings.repository:
        raise UsageError(f"the results file is for {results.repository!r}, not {settings.repository!r}")
    number = event.pull_request or results.pull_request
    if number is None:
        line("lvegit: no pull request to comment on")
        return 0
    api = PullRequests(settings.api_url, settings.token, settings.repository, settings.retry)
    current = api.head_sha(number)
    if event.head != current:  # the run is of an older head: a newer run will comment
        _stale(event.head, number, current)
        return 0
    facts = api.facts(number)
    on_branch = results.base_sha is not None and api.on_branch(results.base_sha, facts.base_sha)
    repository, workflow = settings.repository, settings.check_workflow
    # A pull request into another branch ran that branch's check workflow, from the same path.
    same = facts.base_ref == facts.default_branch or api.same_file(
        workflow, facts.base_sha, facts.default_branch
    )
    found = doubts(results, event.origin, facts, workflow, repository, settings.lve_root, on_branch, same)
    if results.pull_request not in (None, number):
        found.append(f"they are for pull request #{results.pull_request}, not #{number}")
    if event.origin is not None:
        found += _branch_doubts(api, event.origin.head_label, number, facts.base_ref)
    for doubt in found:
        line(f"lvegit: not verified: {doubt}")
    _upsert(api, number, render(results, settings.server_url, doubts=found))
    return 0


def _branch_doubts(api: PullRequests, label: str, number: int, base_ref: str) -> list[str]:
    """Which pull request a run was for, GitHub does not say (a fork's workflow_run names none, and
    another's names each from its branch): the run must be of `number`'s branch, and no other pull
    request from that branch, open or closed, may be into another base branch (whose check workflow the
    run may have been, naming `number` in its artifact)."""
    pulls = api.pulls_from(label) if label else {}
    if number not in pulls:
        return [f"the run was for the branch {label or 'GitHub did not name'}, which #{number} is not from"]
    others = [f"#{other} (into {ref})" for other, ref in sorted(pulls.items()) if ref != base_ref]
    return [f"the run may be of another pull request from its branch: {', '.join(others)}"] if others else []


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
