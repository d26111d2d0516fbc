"""The event loop requests run on: uvloop's where it is installed (Linux and macOS), else asyncio's.

A corpus run at high concurrency is bound by the work of one thread per request, the loop's among it: on
uvloop that work takes about a fifth less CPU, and with the garbage collector's thresholds raised a tenth
less (benchmarks/run.py, the corpus scan).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from lvegit.base.collector import collecting_less

Result = TypeVar("Result")


def run_loop(main: Coroutine[Any, Any, Result]) -> Result:
    """`asyncio.run(main)`, on uvloop where it is installed, collecting garbage less often."""
    with collecting_less():
        try:
            import uvloop
        except ImportError:  # Windows: uvloop has no build there
            return asyncio.run(main)
        return uvloop.run(main)
