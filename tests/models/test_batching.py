"""The micro-batcher on plain functions: who batches with whom, splits of batches too big, failures."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Hashable
from concurrent.futures import ThreadPoolExecutor

import pytest

from lvegit.models.batching import Batcher

THREAD = ThreadPoolExecutor(1)


class TooBig(Exception):
    pass


def upper(_key: Hashable, items: list[str]) -> list[str]:
    return [item.upper() for item in items]


def test_concurrent_requests_with_one_key_form_batches_of_at_most_max_size() -> None:
    async def scenario() -> tuple[list[str], list[int]]:
        batcher = Batcher(upper, THREAD, max_size=4)
        results = await asyncio.gather(*(batcher.submit("greedy", f"r{i}") for i in range(10)))
        return results, batcher.sizes

    results, sizes = asyncio.run(scenario())
    assert results == [f"R{i}" for i in range(10)] and sizes == [4, 4, 2]


def test_requests_with_different_keys_never_share_a_batch() -> None:
    seen: list[tuple[Hashable, list[str]]] = []

    def record(key: Hashable, items: list[str]) -> list[str]:
        seen.append((key, items))
        return [f"{key}:{item}" for item in items]

    async def scenario() -> list[str]:
        batcher = Batcher(record, THREAD, max_size=8)
        keys = ["a", "b", "a", "b", "a"]
        return await asyncio.gather(*(batcher.submit(k, str(i)) for i, k in enumerate(keys)))

    assert asyncio.run(scenario()) == ["a:0", "b:1", "a:2", "b:3", "a:4"]
    assert seen == [("a", ["0", "2", "4"]), ("b", ["1", "3"])]


def test_requests_arriving_while_a_batch_runs_form_the_next_batch() -> None:
    started = threading.Event()
    release = threading.Event()

    def slow(_key: Hashable, items: list[str]) -> list[str]:
        started.set()
        release.wait(5)
        return items

    async def scenario() -> list[int]:
        batcher = Batcher(slow, THREAD, max_size=8)
        first = asyncio.ensure_future(batcher.submit("k", "first"))
        await asyncio.to_thread(started.wait, 5)
        later = [asyncio.ensure_future(batcher.submit("k", str(i))) for i in range(3)]
        await asyncio.sleep(0.01)
        release.set()
        await asyncio.gather(first, *later)
        return batcher.sizes

    assert asyncio.run(scenario()) == [1, 3]


def test_a_batch_too_big_is_split_in_halves_down_to_what_fits() -> None:
    def fits_two(_key: Hashable, items: list[str]) -> list[str]:
        if len(items) > 2:
            raise TooBig(f"{len(items)} do not fit")
        return [item * 2 for item in items]

    async def scenario() -> tuple[list[str], list[int]]:
        batcher = Batcher(fits_two, THREAD, max_size=8, too_big=lambda error: isinstance(error, TooBig))
        results = await asyncio.gather(*(batcher.submit("k", str(i)) for i in range(7)))
        return results, batcher.sizes

    results, sizes = asyncio.run(scenario())
    assert results == [str(i) * 2 for i in range(7)]
    assert sizes == [7, 3, 1, 2, 4, 2, 2]


def test_a_single_request_too_big_and_other_errors_fail_their_requests() -> None:
    def fails(_key: Hashable, items: list[str]) -> list[str]:
        if "boom" in items:
            raise ValueError("broken batch")
        raise TooBig("never fits")

    async def scenario() -> list[BaseException | str]:
        batcher = Batcher(fails, THREAD, max_size=8, too_big=lambda error: isinstance(error, TooBig))
        return await asyncio.gather(
            batcher.submit("big", "x"),
            batcher.submit("big", "y"),
            batcher.submit("other", "boom"),
            batcher.submit("other", "z"),
            return_exceptions=True,
        )

    big_x, big_y, boom, z = asyncio.run(scenario())
    assert isinstance(big_x, TooBig) and isinstance(big_y, TooBig)
    assert isinstance(boom, ValueError) and boom is z  # the whole batch fails with its error


def test_a_caller_that_gives_up_leaves_the_others_their_results() -> None:
    async def scenario() -> list[str]:
        batcher = Batcher(upper, THREAD, max_size=8)
        abandoned = asyncio.ensure_future(batcher.submit("k", "gone"))
        kept = [asyncio.ensure_future(batcher.submit("k", s)) for s in ("a", "b")]
        await asyncio.sleep(0)
        abandoned.cancel()
        results = await asyncio.gather(*kept)
        await batcher.close()
        return results

    assert asyncio.run(scenario()) == ["A", "B"]


def test_a_backend_returning_the_wrong_number_of_results_fails_instead_of_hanging() -> None:
    async def scenario() -> None:
        batcher = Batcher(lambda _key, items: items[:1], THREAD, max_size=8)
        await asyncio.gather(batcher.submit("k", "a"), batcher.submit("k", "b"))

    with pytest.raises(RuntimeError, match="a batch of 2 requests returned 1 results"):
        asyncio.run(scenario())
