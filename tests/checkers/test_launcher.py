"""Workers are forked by one launcher process per lvegit process, never by lvegit itself."""

from __future__ import annotations

import contextlib
import gc
import os
import shutil
import signal
import threading
from pathlib import Path

import pytest

from lvegit.base.errors import CheckerError
from lvegit.checkers.launcher import launcher
from lvegit.checkers.sandbox import CheckerWorker


def children_of(pid: int) -> set[int]:
    found = set()
    for status in Path("/proc").glob("[0-9]*/status"):
        with contextlib.suppress(OSError, StopIteration):
            lines = status.read_text().splitlines()
            if int(next(line.split()[1] for line in lines if line.startswith("PPid:"))) == pid:
                found.add(int(status.parent.name))
    return found


def test_workers_share_one_launcher_that_holds_no_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-launcher-must-not-see")
    first, second = CheckerWorker("a", tmp_path), CheckerWorker("b", tmp_path)
    try:
        assert first.pid is not None and second.pid is not None
        # lvegit's children are launchers (or bubblewrap around them), never a worker
        from lvegit.checkers.launcher import _LAUNCHERS

        assert launcher()._process.pid in children_of(os.getpid())
        assert children_of(os.getpid()) <= {running._process.pid for running in _LAUNCHERS.values()}
        environ = Path(f"/proc/{launcher()._process.pid}/environ")
        if os.geteuid() != 0:  # the launcher hides its environment from its own user: only root reads it
            with pytest.raises(PermissionError):
                environ.read_bytes()
        else:
            assert b"sk-launcher-must-not-see" not in environ.read_bytes()
    finally:
        first.close()
        second.close()


def test_the_launcher_outlives_the_thread_that_started_it(tmp_path: Path) -> None:
    from lvegit.checkers.launcher import close_launchers

    close_launchers()  # the next worker starts a launcher, from a thread that then ends
    started = threading.Thread(target=lambda: CheckerWorker("in-thread", tmp_path).close())
    started.start()
    started.join()
    worker = CheckerWorker("after", tmp_path)
    worker.close()
    assert worker.isolation


def test_a_dead_launcher_costs_its_workers_a_clear_error_and_is_replaced(tmp_path: Path) -> None:
    worker = CheckerWorker("sandbox/old", tmp_path)
    old = launcher()._process
    os.kill(old.pid, signal.SIGKILL)
    old.wait()
    with pytest.raises(CheckerError, match=r"^sandbox/old: the checker process was ended by SIGKILL"):
        worker._receive(timeout=30)  # ends as the worker dies with its launcher
    worker.close()
    replacement = CheckerWorker("sandbox/new", tmp_path)
    replacement.close()
    assert replacement.isolation


def test_a_worker_nobody_closed_leaves_no_scratch_folder(tmp_path: Path) -> None:
    worker = CheckerWorker("forgotten", tmp_path)
    scratch = Path(worker._workdir)
    assert scratch.is_dir()
    del worker
    gc.collect()
    assert not scratch.exists()


def test_a_launcher_for_lambdas_loads_no_custom_checker_machinery() -> None:
    """The launcher's own code (what every worker it forks starts with) leaves out what custom checkers run
    on; it loads that when it forks the first custom checker's worker (worker.load_checker_machinery)."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "import lvegit.checkers.worker as worker\n"
        "machinery = ('lvegit.checkers.custom', 'lvegit.checkers.hub', 'lvegit.checkers.base')\n"
        "print([name in sys.modules for name in machinery])\n"
        "worker.load_checker_machinery()\n"
        "print([name in sys.modules for name in machinery])\n"
    )
    result = subprocess.run([sys.executable, "-I", "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.splitlines() == ["[False, False, False]", "[True, True, True]"]


def test_asking_for_the_launcher_again_while_it_starts_does_not_wait_for_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """start_launcher_soon is asked by several stages of a check; a start under way is not repeated and
    does not hold up whoever asks again (it once held the lock the start holds until its hello)."""
    import lvegit.checkers.launcher as launcher_module

    release, started = threading.Event(), threading.Event()
    made: list[str] = []

    class SlowLauncher:
        alive = True

        def __init__(self, executable: str, scratch: str, hub: str) -> None:
            made.append(scratch)
            started.set()
            release.wait(30)

        def close(self) -> None:
            pass

    monkeypatch.setattr(launcher_module, "Launcher", SlowLauncher)
    monkeypatch.setattr(launcher_module, "_LAUNCHERS", {})
    monkeypatch.setattr(launcher_module, "_SOON", [])
    launcher_module.start_launcher_soon()
    assert started.wait(30)
    launcher_module.start_launcher_soon()  # returns although the first start is still under way
    assert launcher_module.launcher_starting() and len(made) == 1
    release.set()
    launcher_module._SOON[0].join(30)
    assert not launcher_module.launcher_starting() and len(made) == 1
    assert next(iter(launcher_module._LAUNCHERS.values())).alive
    for scratch in made:
        shutil.rmtree(scratch, ignore_errors=True)
