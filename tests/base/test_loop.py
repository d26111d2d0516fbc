from __future__ import annotations

import asyncio
import gc
import sys

import pytest

from lvegit.base.collector import RUN_GC_THRESHOLD
from lvegit.base.loop import run_loop


async def loop_and_threshold() -> tuple[str, tuple[int, int, int]]:
    await asyncio.sleep(0)
    return type(asyncio.get_running_loop()).__module__, gc.get_threshold()


def test_a_run_is_on_uvloop_collecting_less_and_the_process_is_as_before_afterwards() -> None:
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    module, during = run_loop(loop_and_threshold())
    assert module.startswith("uvloop" if sys.platform != "win32" else "asyncio")
    assert during == RUN_GC_THRESHOLD
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == frozen


async def failing() -> None:
    raise ValueError("the run's own error")


def test_an_error_of_the_run_reaches_the_caller_and_the_thresholds_come_back() -> None:
    before = gc.get_threshold()
    with pytest.raises(ValueError, match="the run's own error"):
        run_loop(failing())
    assert gc.get_threshold() == before


def test_without_uvloop_the_run_is_on_asyncio(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # as where it is not installed: importing it fails
    module, _threshold = run_loop(loop_and_threshold())
    assert module.startswith("asyncio")


def test_what_the_process_froze_itself_stays_frozen() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        run_loop(loop_and_threshold())
        assert gc.get_freeze_count() >= frozen
    finally:
        gc.unfreeze()
