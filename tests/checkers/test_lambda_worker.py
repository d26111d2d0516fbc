"""Checker lambdas in the lambda worker: hostile ones end in an error naming the LVE and the argument, with
the worker killed by lvegit (time) or stopped by the kernel (memory), and the LVE's budget counted once."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest

from lvegit.base.settings import configure, current
from lvegit.checkers import lambda_worker
from lvegit.checkers.core import LambdaChecker
from lvegit.judge.replay import replay_lve
from lvegit.judge.results import ReplayResult
from lvegit.lve.repo import Repository

from builders import RepoBuilder, instance

# Each held a check for 23-43 s with a 5 s LVE budget: work done in C, where lambda_work's charges for the
# steps around it were a few units.
WORK_IN_C = [
    pytest.param(
        "lambda r, **p: len(set(range(0, 10**5 * (2**61 - 1), 2**61 - 1))) > 0", id="colliding-integers"
    ),
    pytest.param("lambda r, **p: len(sum([[0] * 1000] * 10**4, [])) > 0", id="sum-of-lists"),
    pytest.param(
        "lambda r, **p: (lambda f: f(f, 40) == f(f, 40))(lambda f, n: [f(f, n - 1)] * 2 if n else [])",
        id="equality-of-shared-nested-lists",
    ),
    pytest.param(
        "lambda r, **p: [len({{(t, i) for i in range(10**5)}}) for t in [tuple(range(10**6))]][0] > 0",
        id="hashing-a-big-tuple-again-and-again",
    ),
    pytest.param(  # each search well under its 2 s timeout, two hundred of them
        "lambda r, **p: sum(1 for i in range(200) if re.search('(a|aa)+$', 'a' * 26 + '!')) >= 0",
        id="regex-calls-under-their-timeout",
    ),
]
# Each built 2.3-2.9 GB before lambda_work could charge what it built; here 400 MB, under a limit of 256 MiB
# for the test (braces doubled: test.json strings are templates).
BUILT_IN_C = [
    pytest.param("lambda r, **p: len(f'{{[[r] * 100] * 4}}') > 0", id="f-string"),
    pytest.param("lambda r, **p: len('%s' % ([[r] * 100] * 4,)) > 0", id="percent-formatting"),
    pytest.param("lambda r, **p: len(str([[r] * 100] * 4)) > 0", id="str"),
]


def replay(repo: RepoBuilder, func: str, responses: list[str]) -> list[ReplayResult]:
    lve_dir = repo.lve(
        "hostile/lambda",
        {"checker_args": {"checker_name": "LambdaChecker", "func": func}},
        instances={"i.jsonl": [instance(response, True, a=1, b=2) for response in responses]},
    )
    return replay_lve(Repository(repo.root.resolve()), lve_dir)


def test_a_verdict_past_its_time_ends_with_its_worker(
    repo: RepoBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed, not estimated: the worker is ended (and another started for the next verdict)."""
    monkeypatch.setattr(lambda_worker, "VERDICT_SECONDS", 1.0)
    for number, func in enumerate(param.values[0] for param in WORK_IN_C):
        killed = lambda_worker.worker().killed
        [result] = replay(repo, func, ["x"])
        assert result.lve == "repository/hostile/lambda/openai--gpt-4o-mini"
        assert (result.status, result.reason) == (
            "error",
            "checker_args.func: the lambda did not end within 1 s (its worker was stopped)",
        ), WORK_IN_C[number].id
        assert lambda_worker.worker().killed == killed + 1
    [after] = replay(repo, "lambda r, a, b: int(r) == a + b", ["3"])
    assert after.status == "reproduced"


@pytest.mark.parametrize("func", BUILT_IN_C)
def test_a_verdict_that_builds_too_much_reaches_the_memory_limit(
    repo: RepoBuilder, func: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kernel's address-space limit: without it, each builds its string and is judged."""
    monkeypatch.setattr(lambda_worker, "MEMORY_BYTES", 256 * 1024**2)
    monkeypatch.setattr(lambda_worker, "VERDICT_SECONDS", 120.0)  # not the time limit: the memory limit
    lambda_worker.worker().close()  # the next starts with the test's limit
    [result, after] = replay(repo, func, ["x" * 10**6, "y"])
    assert (result.status, result.reason) == (
        "error",
        "checker_args.func: the lambda reached its memory limit of 256 MiB",
    )
    assert after.status == "reproduced"  # the same worker goes on


def test_an_lves_verdicts_stop_at_its_budget_with_one_kill(repo: RepoBuilder) -> None:
    """The worker's time is the LVE's budget: the first verdict takes all of it, and the others of the batch
    are not sent (with the worker's time uncounted, each was killed in turn)."""
    configure(replace(current(), checkers=replace(current().checkers, lve_budget=1.0)))
    killed = lambda_worker.worker().killed
    results = replay(repo, WORK_IN_C[2].values[0], ["x", "y", "z"])
    budget = "not judged: its checker used up its time budget (1 s for each LVE, LVEGIT_CHECKER_LVE_BUDGET)"
    assert [r.reason for r in results] == [budget] * 3
    assert lambda_worker.worker().killed == killed + 1


def test_a_lambda_that_decides_its_verdict_is_answered_in_one_pass() -> None:
    """Replay's verdicts are the checker's (are_checkers): the worker's answer to a LambdaChecker's lambda is
    the verdict, with no second pass through the checker. A live run's verdicts record what they judged, so
    theirs run again; and a lambda that failed goes through the checker again, which names its argument."""
    checker, failing = LambdaChecker("lambda r: r == 'yes'"), LambdaChecker("lambda r: r + 1")
    passes: list[str] = []

    def verdict(judging: LambdaChecker, response: str) -> Any:
        def judged() -> bool:
            passes.append(response)
            return judging.is_safe(None, response)

        return judged

    assert lambda_worker.judge_batched([verdict(checker, "yes"), verdict(checker, "no")], True) == [
        True,
        False,
    ]
    assert passes == ["yes", "no"]
    passes.clear()
    assert lambda_worker.judge_batched([verdict(checker, "yes"), verdict(checker, "no")]) == [True, False]
    assert passes == ["yes", "no", "yes", "no"]
    passes.clear()
    [error] = lambda_worker.judge_batched([verdict(failing, "x")], True)
    assert passes == ["x", "x"]
    assert str(error) == (
        "checker_args.func: the lambda cannot be called with the response and parameters: "
        'can only concatenate str (not "int") to str'
    )


def test_a_batch_larger_than_the_worker_reads_at_once_is_sent_in_parts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Long responses in one batch: it is halved until each part is within MAX_BATCH_CHARS, a call larger
    than that alone; every call gets its own outcome, in order."""
    monkeypatch.setattr(lambda_worker, "MAX_BATCH_CHARS", 1000)
    rounds = []
    sent = lambda_worker.LambdaWorker._round

    def counted(self: Any, calls: Any, waiting: list[int], outcomes: Any) -> list[int]:
        rounds.append(len(waiting))
        return sent(self, calls, waiting, outcomes)

    monkeypatch.setattr(lambda_worker.LambdaWorker, "_round", counted)
    calls = [
        lambda_worker.Call("lambda r: len(r)", "number", [text * size], {}, None, False)
        for text, size in [("a", 300), ("b", 300), ("c", 300), ("d", 300), ("e", 3000), ("f", 1)]
    ]
    outcomes = lambda_worker.worker().evaluate(calls)
    assert outcomes == [("300", None)] * 4 + [("3000", None), ("1", None)]
    # the calls waiting in each round: [a, b, c] is too long, so [a]; then [b, c] of 5; [d] of 3; [e]; [f]
    assert rounds == [6, 5, 3, 2, 1]


def test_the_live_runs_event_loop_serves_others_while_the_worker_judges() -> None:
    """judge_batched_async awaits the worker's replies: a coroutine beside it runs meanwhile (a blocking
    wait held the loop, and every request in flight, for each batch)."""
    slow = LambdaChecker("lambda r: sum(1 for i in range(300000)) > 0")  # about 0.2 s in the worker
    judging, ticks = asyncio.Event(), []

    async def ticker() -> None:
        while True:
            await asyncio.sleep(0.001)
            if judging.is_set():
                ticks.append(1)

    async def run() -> list[Any]:
        beside = asyncio.create_task(ticker())
        await asyncio.sleep(0)
        judging.set()
        results = await lambda_worker.judge_batched_async([lambda: slow.is_safe(None, "x")], True)
        judging.clear()
        beside.cancel()
        return results

    assert asyncio.run(run()) == [True]
    assert ticks
