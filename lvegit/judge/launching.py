"""When a check or a replay starts the checker launcher (lvegit.checkers.launcher): as soon as it knows that
an LVE it judges will ask it for a worker, so that the launcher starts while lvegit loads the rest of its
code and judges the LVEs that need none, instead of after."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from lvegit.checkers.launcher import start_launcher_soon
from lvegit.checkers.registry import needs_of
from lvegit.lve.environment import environment_folder
from lvegit.lve.repo import CHECKER_DIR, Repository, named_checker


def needs_launcher(lve_dir: Path, named: tuple[str, dict[str, Any]] | None) -> bool:
    """Whether judging the LVE asks the launcher for a worker: its checker (`named`, as test.json names it)
    runs in the sandbox or judges lambdas in batches there, or it has a checker folder (custom checker code)
    or an environment. A folder whose test.json names one of lvegit's own checkers only costs a process
    that nobody asks for a worker."""
    if named is not None:
        needs = needs_of(named[0])
        if needs.runs == "sandbox" or needs.lambda_batches:
            return True
    return (lve_dir / CHECKER_DIR).is_dir() or environment_folder(lve_dir).is_dir()


def start_launcher_for(repo: Repository, lve_dirs: Iterable[Path]) -> None:
    """Start the launcher now when one of these LVEs needs it."""
    if any(needs_launcher(lve_dir, named_checker(repo, lve_dir)) for lve_dir in lve_dirs):
        start_launcher_soon()
