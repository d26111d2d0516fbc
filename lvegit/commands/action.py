from __future__ import annotations

import contextlib
import os
import posixpath
from dataclasses import replace
from pathlib import Path

import click

from lvegit.base.errors import UsageError
from lvegit.base.files import walk
from lvegit.base.settings import configure
from lvegit.commands.catalog import short_help
from lvegit.commands.options import current_settings, open_repository
from lvegit.github.context import action_input, flag, read_event
from lvegit.github.flow import ActionSettings, check, comment, environment_settings
from lvegit.github.results import parse_fail_on
from lvegit.github.verify import CHECK_WORKFLOW


def _number(name: str, default: int) -> int:
    value = action_input(name, str(default))
    if not value.isdigit() or int(value) < 1:
        raise UsageError(f"input '{name}' must be a whole number of at least 1, not {value!r}")
    return int(value)


def _from_top(path: str) -> str:
    """The path input as a path from the top of the repository: '' for the top itself."""
    normal = posixpath.normpath(path.replace("\\", "/")).lstrip("/")
    return "" if normal == "." else normal


def trusting_workspace(workspace: Path) -> tuple[tuple[str, str], ...]:
    """Inside the action's container the checkout belongs to another user: what tells every git command
    lvegit runs to read it anyway, a safe.directory entry added after whatever configuration the job
    already passes to git through GIT_CONFIG_COUNT (a url.*.insteadOf, say), never in its place."""
    count = os.environ.get("GIT_CONFIG_COUNT", "0")
    index = int(count) if count.isdigit() else 0
    return (
        (f"GIT_CONFIG_KEY_{index}", "safe.directory"),
        (f"GIT_CONFIG_VALUE_{index}", str(workspace)),
        ("GIT_CONFIG_COUNT", str(index + 1)),
    )


def hand_back(workspace: Path) -> None:
    """GitHub runs the action's container as root over a checkout that belongs to the runner's user: what
    lvegit (or git for it: fetched history, refs) created there would be root's, and a later step's git gc
    or fetch fails with "Permission denied". Give every root-owned entry back to the workspace's owner."""
    if os.geteuid() != 0:
        return
    owner = os.stat(workspace)
    if owner.st_uid == 0:
        return
    for folder, _folders, others in walk(workspace):  # each folder comes as `folder` once
        for path in [folder, *(folder / name for name in others)]:
            with contextlib.suppress(OSError):
                if os.lstat(path).st_uid == 0:
                    os.lchown(path, owner.st_uid, owner.st_gid)


@click.command("action", short_help=short_help("action"))
@click.option("--mode", type=click.Choice(["check", "comment"]), help="Overrides the mode input.")
def action_command(mode: str | None) -> int:
    """The GitHub Action's entry point (also runnable locally with GitHub's environment variables).

    It reads GITHUB_EVENT_NAME, GITHUB_EVENT_PATH, GITHUB_REPOSITORY, GITHUB_API_URL, GITHUB_WORKSPACE,
    GITHUB_STEP_SUMMARY, GITHUB_OUTPUT, GITHUB_TOKEN and the INPUT_* variables of action.yml.
    check mode validates, replays and (when a model is reachable) re-runs the changed LVEs and writes a
    results file; comment mode turns a results file into the pull request's one verdict comment.

    \b
    Examples:
      GITHUB_EVENT_NAME=pull_request GITHUB_EVENT_PATH=event.json GITHUB_REPOSITORY=org/lves lvegit action
      INPUT_MODE=comment INPUT_RESULTS-DIR=results lvegit action
    """
    workspace = Path(os.environ.get("GITHUB_WORKSPACE") or Path.cwd())
    invocation = configure(replace(current_settings(), git_environment=trusting_workspace(workspace)))
    live = action_input("live", "auto").lower()
    if live not in ("auto", "true", "false"):
        raise UsageError(f"input 'live' must be auto, true or false, not {live!r}")
    results_dir = Path(action_input("results-dir", "lvegit-results"))
    settings = ActionSettings(
        mode=mode or action_input("mode", "check"),
        live=live,
        repeat=_number("repeat", 1),
        concurrency=_number("concurrency", 8),
        fail_on=parse_fail_on(action_input("fail-on", "invalid,mismatch,error")),
        append=flag("append", True),
        comment=flag("comment", False),
        results_dir=results_dir if results_dir.is_absolute() else workspace / results_dir,
        token=action_input("github-token", os.environ.get("GITHUB_TOKEN", "")),
        retry=invocation.retry,
        cache=invocation.cache,
        check_workflow=action_input("check-workflow", CHECK_WORKFLOW),
        lve_root=_from_top(action_input("path", ".")),
        **environment_settings(workspace),
    )
    if settings.mode not in ("check", "comment"):
        raise UsageError(f"input 'mode' must be check or comment, not {settings.mode!r}")
    event = read_event(base_override=action_input("base"))
    if settings.mode == "comment":
        return comment(event, settings)
    repo = open_repository(workspace / action_input("path", "."))
    try:
        return check(repo, event, settings)
    finally:
        hand_back(workspace)
