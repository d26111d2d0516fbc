"""The live run's lambda verdicts, a batch at a time: what becomes of the verdicts when a batch fails."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lvegit.run import verdicts
from lvegit.run.verdicts import LambdaVerdicts


def test_a_failed_batch_fails_its_verdicts_and_the_next_batch_is_still_judged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """lvegit's own failure in one batch is each of its verdicts' error; a verdict that became ready while
    that batch was judged is judged in the next (it waited for ever when the failure ended the batches)."""
    batches: list[int] = []

    async def judged(waiting: list[Any], are_checkers: bool = False) -> list[Any]:
        batches.append(len(waiting))
        await asyncio.sleep(0.01)
        if len(batches) == 1:
            raise RuntimeError("lvegit's own failure")
        return [verdict() for verdict in waiting]

    monkeypatch.setattr(verdicts, "judge_batched_async", judged)

    async def run() -> list[Any]:
        lambdas = LambdaVerdicts()
        first = asyncio.ensure_future(lambdas.judge("a", lambda: True))
        await asyncio.sleep(0.001)  # the first batch is being judged (its 0.01 s sleep comes later)
        second = asyncio.ensure_future(lambdas.judge("b", lambda: False))
        return await asyncio.wait_for(asyncio.gather(first, second, return_exceptions=True), 10)

    first, second = asyncio.run(run())
    assert isinstance(first, RuntimeError)
    assert second == (False, 0.0)
    assert batches == [1, 1]
