"""Live re-runs for a check: the recorded instances of the LVEs that passed validation, re-executed against
their models when one is reachable and the caller allows it, with the results per instance and the
instances appended. The Action's check mode uses it; `lvegit run` is the command for the same work."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from lvegit.base.errors import UsageError
from lvegit.base.settings import RetryPolicy
from lvegit.judge.results import Appended
from lvegit.lve.repo import Repository
from lvegit.lve.routing_file import Reader
from lvegit.models.routing import ModelPool
from lvegit.run.rerun import InstanceResult, by_instance, plan_reruns
from lvegit.run.runner import Runner


@dataclass
class Live:
    """Whether live re-runs happened (and why, or why not) and what they found, by LVE path."""

    enabled: bool
    reason: str
    pool: ModelPool | None = None
    instances: dict[str, list[InstanceResult]] = field(default_factory=dict)
    appended: dict[str, list[Appended]] = field(default_factory=dict)


def _live_pool(repo: Repository, mode: str, models: set[str], routing: Reader | None) -> Live:
    if not models:
        return Live(False, "no instances to re-run")
    try:
        pool = ModelPool(repo.root, read=routing)
        for model in sorted(models):
            pool.get(model)
    except UsageError as exc:
        if mode == "true":
            raise
        return Live(False, f"no model available here: {exc}".split("\n")[0])
    return Live(True, "enabled", pool)


def run_live(
    repo: Repository,
    lve_dirs: list[Path],
    mode: str,
    repeat: int,
    append: bool,
    concurrency: int,
    retry: RetryPolicy,
    routing: Reader | None = None,
) -> Live:
    """Re-run the LVEs' recorded instances. `mode`: "auto" (when every model is reachable), "true" (a
    model that is not is a UsageError) or "false". `routing`: where the routing file comes from (default:
    the work tree; a pull request's check reads its base commit's)."""
    if mode == "false":  # nothing to plan
        return Live(False, "disabled by the live input")
    plan = plan_reruns(repo, lve_dirs, None, repeat, append)
    live = _live_pool(repo, mode, {task.attempt.model for task in plan.tasks}, routing)
    if not live.enabled or live.pool is None:
        return live
    attempts = Runner(live.pool, concurrency, retry).run(plan.tasks)
    for result in by_instance(attempts):
        live.instances.setdefault(result.lve, []).append(result)
    for attempt in attempts:
        if attempt.appended_to:
            appended = Appended(repo.relative(Path(attempt.appended_to)), attempt.verdict, attempt.response)
            live.appended.setdefault(attempt.lve, []).append(appended)
    return live
