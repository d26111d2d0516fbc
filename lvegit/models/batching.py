"""Requests that arrive together, run together: a micro-batcher for backends that compute batches.

Requests with the same key (the same generation arguments) that arrive within a short window, or while
the previous batch is computing, form one batch of at most `max_size`. Batches run one at a time, off the
event loop, in the executor given: the transformers backend gives each loaded model one thread of its
own, since on CUDA a thread pays again for every new shape of work it meets (measured on an H100: a first
batch three times slower in a new thread than in the thread that had run it before). A batch that is too
big for the device (`too_big(error)`) is split in halves and each half retried, down to single requests;
any other error fails every request of its batch.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")

WINDOW_SECONDS = 0.005  # how long a first request waits for others to join its batch


@dataclass
class _Request(Generic[Item, Result]):
    key: Hashable
    item: Item
    future: asyncio.Future[Result]


class Batcher(Generic[Item, Result]):
    def __init__(
        self,
        run: Callable[[Hashable, list[Item]], list[Result]],
        executor: Executor,
        max_size: int,
        too_big: Callable[[BaseException], bool] = lambda _error: False,
        window: float = WINDOW_SECONDS,
    ) -> None:
        self.run = run
        self.executor = executor
        self.max_size = max(1, max_size)
        self.too_big = too_big
        self.window = window
        self.sizes: list[int] = []  # the size of every batch run, splits included
        self._pending: list[_Request[Item, Result]] = []
        self._worker: asyncio.Task[None] | None = None

    async def submit(self, key: Hashable, item: Item) -> Result:
        future: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
        self._pending.append(_Request(key, item, future))
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._drain())
        return await future

    async def close(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            await asyncio.gather(self._worker, return_exceptions=True)
        for request in self._pending:
            request.future.cancel()
        self._pending.clear()

    async def _drain(self) -> None:
        while self._pending:
            await asyncio.sleep(self.window)
            key = self._pending[0].key  # the oldest request's batch goes first: no request starves
            batch = [request for request in self._pending if request.key == key][: self.max_size]
            taken = {id(request) for request in batch}
            self._pending = [request for request in self._pending if id(request) not in taken]
            await self._run(key, [request for request in batch if not request.future.cancelled()])

    async def _run(self, key: Hashable, batch: list[_Request[Item, Result]]) -> None:
        if not batch:
            return
        self.sizes.append(len(batch))
        try:
            items = [request.item for request in batch]
            results = await asyncio.get_running_loop().run_in_executor(self.executor, self.run, key, items)
        except Exception as error:
            if len(batch) > 1 and self.too_big(error):
                half = len(batch) // 2
                await self._run(key, batch[:half])
                await self._run(key, batch[half:])
                return
            _fail(batch, error)
            return
        if len(results) != len(batch):  # a broken backend must not leave a request waiting forever
            _fail(batch, RuntimeError(f"a batch of {len(batch)} requests returned {len(results)} results"))
            return
        for request, result in zip(batch, results, strict=True):
            if not request.future.done():  # its caller may have given up
                request.future.set_result(result)


def _fail(batch: list[_Request[Any, Any]], error: BaseException) -> None:
    for request in batch:
        if not request.future.done():
            request.future.set_exception(error)
