"""How often the garbage collector runs while lvegit works through many small objects.

A run allocates many small objects per request that die young (bodies, messages, results), a replay many
per instance: scanned every 700 allocations, as by default, a tenth of their CPU went to the collector
(replay: 1.4 s of 11 s at 5,000 LVEs), most of it walking the modules and settings the process holds.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

RUN_GC_THRESHOLD = (20_000, 10, 10)


@contextlib.contextmanager
def collecting_less() -> Iterator[None]:
    """What the process holds when a run or a replay starts (modules, settings) is left out of collections
    (frozen); young objects are collected every RUN_GC_THRESHOLD[0] allocations. A process that froze objects
    itself (an application embedding lvegit) keeps them frozen: then what the run froze stays so too."""
    previous, frozen_before = gc.get_threshold(), gc.get_freeze_count()
    gc.freeze()
    gc.set_threshold(*RUN_GC_THRESHOLD)
    try:
        yield
    finally:
        gc.set_threshold(*previous)
        if not frozen_before:
            gc.unfreeze()
