"""The event loop requests run on: uvloop's where it is installed (Linux and macOS), else asyncio's.

A corpus run at high concurrency is bound by the work of one thread per request, the loop's among it: on
uvloop that work takes about a fifth less CPU, and with the garbage collector's thresholds raised a tenth
less (benchmarks/run.py, the corpus scan).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

Result = TypeVar("Result")
# A run allocates many small objects per request that die young (bodies, messages, results): scanned every
# 700 allocations, as by default, a tenth of a run's CPU went to the collector.
RUN_GC_THRESHOLD = (20_000, 10, 10)


def run_loop(main: Coroutine[Any, Any, Result]) -> Result:
    """`asyncio.run(main)`, on uvloop where it is installed, collecting garbage less often."""
    with _collecting_less():
        try:
            import uvloop
        except ImportError:  # Windows: uvloop has no build there
            return asyncio.run(main)
        return uvloop.run(main)


@contextlib.contextmanager
def _collecting_less() -> Iterator[None]:
    """What the process holds when the run starts (modules, settings) is left out of collections (frozen);
    young objects are collected every RUN_GC_THRESHOLD[0] allocations. A process that froze objects itself
    (an application embedding lvegit) keeps them frozen: then what the run froze stays so too."""
    previous, frozen_before = gc.get_threshold(), gc.get_freeze_count()
    gc.freeze()
    gc.set_threshold(*RUN_GC_THRESHOLD)
    try:
        yield
    finally:
        gc.set_threshold(*previous)
        if not frozen_before:
            gc.unfreeze()
