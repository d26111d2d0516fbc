"""The live run's lambda verdicts, judged in batches by the lambda worker
(lvegit.checkers.lambda_worker.judge_batched_async), one batch at a time: the verdicts that became ready
while the last batch was judged go together, so that the process hop costs microseconds per verdict, and
the event loop serves requests while the worker judges."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from lvegit.checkers.budget import command_budget
from lvegit.checkers.lambda_worker import judge_batched_async

Waiting = tuple[str, Callable[[], bool], asyncio.Future[tuple[bool, float]]]


class LambdaVerdicts:
    def __init__(self) -> None:
        self._waiting: list[Waiting] = []
        self._judging: asyncio.Task[None] | None = None

    async def judge(self, lve: str, verdict: Callable[[], bool]) -> tuple[bool, float]:
        """Give the verdict (a call that returns its checker's, conversation.judge) with the others ready:
        what it came to, and the seconds its LVE's verdicts took in that batch."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[tuple[bool, float]] = loop.create_future()
        self._waiting.append((lve, verdict, future))
        if self._judging is None:
            self._judging = loop.create_task(self._judge_waiting())
        return await future

    async def _judge_waiting(self) -> None:
        """Judge batches until no verdict waits (the first batch: what became ready in this turn)."""
        try:
            while self._waiting:
                waiting, self._waiting = self._waiting, []
                try:
                    await self._judge(waiting)
                except Exception as exc:  # lvegit's own failure: each verdict's attempt reports it
                    _fail(waiting, exc)  # and the verdicts that became ready meanwhile go on
                except BaseException as exc:  # cancelled with the run: no verdict is left waiting
                    _fail(waiting + self._waiting, exc)
                    self._waiting = []
                    raise
        finally:
            self._judging = None

    @staticmethod
    async def _judge(waiting: list[Waiting]) -> None:
        spent = command_budget().by_lve
        before = {lve: spent.get(lve, 0.0) for lve, _verdict, _future in waiting}
        verdicts = [verdict for _lve, verdict, _future in waiting]
        results = await judge_batched_async(verdicts, are_checkers=True)
        for (lve, _verdict, future), result in zip(waiting, results, strict=True):
            if future.done():  # its attempt was cancelled meanwhile
                continue
            if isinstance(result, Exception):
                future.set_exception(result)
            else:
                future.set_result((result, spent.get(lve, 0.0) - before[lve]))


def _fail(waiting: list[Waiting], exc: BaseException) -> None:
    for _lve, _verdict, future in waiting:
        if not future.done():
            future.set_exception(exc)
