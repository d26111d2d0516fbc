"""The live run's lambda verdicts, judged in batches: those that become ready in one turn of the event loop
go to the lambda worker together (lvegit.checkers.lambda_worker.judge_batched), so that the process hop
costs microseconds per verdict."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from lvegit.checkers.budget import command_budget
from lvegit.checkers.lambda_worker import judge_batched


class LambdaVerdicts:
    def __init__(self) -> None:
        self._waiting: list[tuple[str, Callable[[], None], asyncio.Future[float]]] = []

    async def judge(self, lve: str, verdict: Callable[[], None]) -> float:
        """Give the verdict (a call that judges and records it) with the others of this turn; the seconds
        its LVE's verdicts took in that batch."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[float] = loop.create_future()
        if not self._waiting:
            loop.call_soon(self._judge_waiting)
        self._waiting.append((lve, verdict, future))
        return await future

    def _judge_waiting(self) -> None:
        waiting, self._waiting = self._waiting, []
        spent = command_budget().by_lve
        before = {lve: spent.get(lve, 0.0) for lve, _verdict, _future in waiting}
        results = judge_batched([verdict for _lve, verdict, _future in waiting])
        for (lve, _verdict, future), result in zip(waiting, results, strict=True):
            if isinstance(result, Exception):
                future.set_exception(result)
            else:
                future.set_result(spent.get(lve, 0.0) - before[lve])
