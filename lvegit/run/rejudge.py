"""`replay --rejudge`: the recorded instances of LVEs judged by a model (a checker that asks a judge) are
judged again by their judge, live, and each new verdict is compared with the recorded one."""

from __future__ import annotations

import asyncio
from pathlib import Path

from lvegit.base.errors import LvegitError, UsageError
from lvegit.base.loop import run_loop
from lvegit.base.settings import RetryPolicy
from lvegit.checkers.llm_judge import ModelJudge
from lvegit.checkers.registry import CheckerFactory, needs_of
from lvegit.judge.conversation import recorded_pairs
from lvegit.judge.replay import replay_error
from lvegit.judge.results import ReplayResult, Status, unsafe_rate, verdict_word
from lvegit.lve.instances import Instance
from lvegit.lve.repo import Repository
from lvegit.lve.spec import LVE, blocking_errors, load_lve
from lvegit.models.routing import ModelPool
from lvegit.run.attempt import Attempt, attempt_id
from lvegit.run.rerun import wilson_interval
from lvegit.run.runner import ask_judge, failing_alone


def rejudge(
    repo: Repository, lve_dirs: list[Path], pool: ModelPool, policy: RetryPolicy, concurrency: int = 8
) -> dict[Path, list[ReplayResult]]:
    """Each LVE's instances judged again (the LVEs not judged by a model are left out)."""
    results: dict[Path, list[ReplayResult]] = {}
    work: list[tuple[Path, LVE, ModelJudge, Instance]] = []
    for lve_dir in lve_dirs:
        lve, problems, _text = load_lve(repo, lve_dir)
        if lve is None or needs_of(lve.checker_name).judge_argument is None:
            continue
        blocking = blocking_errors(problems)
        results[lve_dir] = [replay_error(repo, lve_dir, blocking[0].refusal())] if blocking else []
        if blocking:
            continue
        with CheckerFactory(lve) as factory:  # lvegit's own checker: built here, no worker
            for recorded in lve.recorded():
                for instance in recorded.instances:
                    try:
                        checker = factory.for_args(instance.args)
                    except LvegitError as exc:
                        results[lve_dir].append(_result(lve, instance, None, "error", str(exc)))
                        continue
                    assert isinstance(checker, ModelJudge)
                    work.append((lve_dir, lve, checker, instance))
    _check_judges({checker.judge for _dir, _lve, checker, _instance in work}, pool)
    for (lve_dir, *_rest), result in zip(
        work, run_loop(_ask_all(work, pool, policy, concurrency)), strict=True
    ):
        results[lve_dir].append(result)
    return results


def _check_judges(judges: set[str], pool: ModelPool) -> None:
    """When no judge can be asked here (no route, no key), a usage error naming them, as `run` and
    `record` give for their models; a judge that cannot be asked beside one that can fails its instances."""
    reasons = []
    for judge in sorted(judges):
        try:
            pool.get(judge)
        except UsageError as exc:
            reasons.append(str(exc))
    if judges and len(reasons) == len(judges):
        raise UsageError("\n".join(reasons))


async def _ask_all(
    work: list[tuple[Path, LVE, ModelJudge, Instance]],
    pool: ModelPool,
    policy: RetryPolicy,
    concurrency: int,
) -> list[ReplayResult]:
    limit = asyncio.Semaphore(max(1, concurrency))

    async def one(lve: LVE, checker: ModelJudge, instance: Instance) -> ReplayResult:
        async with limit:
            return await _rejudge(lve, checker, instance, pool, policy)

    try:
        return list(
            await asyncio.gather(*(one(lve, checker, instance) for _d, lve, checker, instance in work))
        )
    finally:
        await pool.close()


async def _rejudge(
    lve: LVE, checker: ModelJudge, instance: Instance, pool: ModelPool, policy: RetryPolicy
) -> ReplayResult:
    params, _model_args = lve.split_args(instance.args)
    attempt = Attempt(
        attempt_id(lve.rel, instance.file, instance.line), lve.rel, checker.judge, instance.args
    )
    judgement = None
    with failing_alone(attempt):
        conversations = [
            conversation for _prompt, conversation in recorded_pairs(lve, params, instance.response)
        ]
        judgement = await ask_judge(pool, checker, conversations, params, attempt, policy)
    if judgement is None or attempt.error is not None:
        return _result(lve, instance, None, "error", attempt.error)
    said = f"{checker.judge} said {', '.join(repr(a[:80]) for a in judgement.answers)}"
    unsafe, asked = judgement.verdicts.count(False), len(judgement.verdicts)
    if asked > 1:
        said += f": {unsafe_rate(unsafe, asked, wilson_interval(unsafe, asked))}"
    agrees = judgement.verdict == instance.passed
    reason = None if agrees else f"recorded {verdict_word(instance.passed)}; {said}"
    return _result(lve, instance, judgement.verdict, "reproduced" if agrees else "mismatch", reason)


def _result(
    lve: LVE, instance: Instance, verdict: bool | None, status: Status, reason: str | None
) -> ReplayResult:
    return ReplayResult(lve.rel, instance.file, instance.line, instance.passed, verdict, status, reason)
