"""The checker sandbox as users meet it: installed packages stay importable wherever Python lives, heavy
libraries load inside the limits, and a worker stopped by a limit says which one."""

from __future__ import annotations

import site
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import lvegit
from lvegit.base.errors import CheckerError, CheckerUnavailable
from lvegit.base.settings import CheckerSettings, Settings, configure
from lvegit.checkers.sandbox import CheckerWorker, SandboxSettings
from lvegit.judge.replay import replay_lve
from lvegit.lve.prompt import Message, Role
from lvegit.lve.repo import Repository
from lvegit.sandbox.privileges import Limits

from builders import RepoBuilder, instance


def probe_lve(repo: RepoBuilder, body: str, imports: str = "import os") -> Path:
    code = (
        f"{imports}\nfrom lvegit.checkers import BaseChecker\n"
        "class Probe(BaseChecker):\n"
        "    def is_safe(self, prompt, response, param_values=None):\n"
        + "".join(f"        {line}\n" for line in body.splitlines())
    )
    return repo.lve(
        "sandbox/probe",
        {"checker_args": {"checker_name": "Probe"}, "prompt": [{"content": "{a}{b}"}]},
        files={"checker/checker.py": code},
        instances={"i.jsonl": [instance("3", True, a=1, b=2)]},
    )


def replay(repo: RepoBuilder, lve_dir: Path) -> list[tuple[str, str | None]]:
    return [(r.status, r.reason) for r in replay_lve(Repository(repo.root.resolve()), lve_dir)]


def test_a_virtual_environment_under_tmp_stays_importable_and_read_only(
    repo: RepoBuilder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, confined: bool
) -> None:
    """The worker's Python lives under /tmp, which the sandbox covers with a fresh tmpfs."""
    if not confined:
        pytest.skip("the sandbox does not hold here: contributed code is refused")
    assert str(tmp_path).startswith("/tmp/")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    [packages] = list(venv.glob("lib/python*/site-packages"))
    # lvegit and its dependencies come from this interpreter's site-packages, as a .pth file adds them.
    lvegit_root = str(Path(lvegit.__file__).resolve().parent.parent)
    (packages / "outer.pth").write_text("\n".join([*site.getsitepackages(), lvegit_root]) + "\n")
    (packages / "only_in_tmp_venv.py").write_text("VALUE = 42\n")
    private = tmp_path / "private.txt"
    private.write_text("not for checkers")
    monkeypatch.setattr(sys, "executable", str(venv / "bin" / "python"))
    lve_dir = probe_lve(
        repo,
        "import only_in_tmp_venv\n"
        "here = os.path.dirname(only_in_tmp_venv.__file__)\n"
        "try:\n"
        "    open(os.path.join(here, 'written.py'), 'w').write('x')\n"
        "    return False\n"
        "except OSError:\n"
        "    pass\n"
        f"return only_in_tmp_venv.VALUE == 42 and not os.path.exists({str(private)!r})",
    )
    assert replay(repo, lve_dir) == [("reproduced", None)]
    assert not (packages / "written.py").exists()


def test_heavy_libraries_load_inside_the_limits(repo: RepoBuilder) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    # transformers imports its GPT-2 code during the verdict, compiled from source where no bytecode was
    # written: on a loaded machine past the default 30 s (what this pins is the limits, not the speed)
    configure(Settings(checkers=CheckerSettings(call_timeout=300.0)))
    lve_dir = probe_lve(
        repo,
        "config = transformers.GPT2Config(n_layer=1, n_head=2, n_embd=8, vocab_size=16, n_positions=8)\n"
        "model = transformers.GPT2LMHeadModel(config).eval()\n"
        "with torch.no_grad():\n"
        "    logits = model(torch.tensor([[1, 2, 3]])).logits\n"
        "return tuple(logits.shape) == (1, 3, 16) and response == '3'",
        imports="import torch\nimport transformers",
    )
    assert replay(repo, lve_dir) == [("reproduced", None)]


def test_not_installed_is_said_only_of_packages_that_are_not_installed(
    repo: RepoBuilder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = probe_lve(repo, "return True", imports="import no_such_package_anywhere")
    [(status, reason)] = replay(repo, missing)
    assert status == "skipped" and str(reason).endswith(
        "imports 'no_such_package_anywhere', which is not installed"
    )
    # Installed for lvegit, yet out of the worker's reach: a sandbox problem, never "not installed".
    (tmp_path / "lvegit_side_only.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    hidden = probe_lve(repo, "return True", imports="import lvegit_side_only")
    [(status, reason)] = replay(repo, hidden)
    assert status == "error"
    assert str(reason).endswith(
        "the Python package 'lvegit_side_only' is installed, but the checker could not import it inside "
        "the sandbox (see lvegit sandbox)"
    )


def judge_with_limits(repo: RepoBuilder, body: str, limits: Limits) -> str:
    lve_dir = probe_lve(repo, body)
    worker = CheckerWorker("sandbox/probe", lve_dir, SandboxSettings(limits=limits, call_timeout=30))
    try:
        checker = worker.build("Probe", {})
        prompt = [Message("12", Role.user)]
        with pytest.raises((CheckerError, CheckerUnavailable)) as failure:
            checker.invoke_check(prompt, [*prompt, Message("3", Role.assistant)], {"a": 1, "b": 2})
    finally:
        worker.close()
    return str(failure.value)


@pytest.mark.parametrize(
    ("body", "limits", "expected"),
    [
        ("while True:\n    pass", Limits(cpu_seconds=1), "the checker reached its CPU time limit of 1 s"),
        (  # a loop in native code never runs Python's SIGXCPU handler: the hard limit kills it
            "import re\nre.match('(a+)+$', 'a' * 64 + 'b')",
            Limits(cpu_seconds=1),
            "the checker reached its CPU time limit of 1 s",
        ),
        (
            "open('big', 'wb').write(b'x' * (2 * 1024**2))",
            Limits(file_bytes=1024**2),
            "the checker reached its file size limit of 1 MiB",
        ),
        (
            "files = [open('f%d' % n, 'w') for n in range(100)]",
            Limits(open_files=64),
            "the checker reached its limit of 64 open files",
        ),
        ("data = bytearray(3 * 1024**3)", Limits(), "the checker reached its memory limit of 2 GiB"),
    ],
    ids=["cpu", "cpu-native", "file-size", "open-files", "memory"],
)
def test_a_worker_stopped_by_a_limit_names_it(
    repo: RepoBuilder, body: str, limits: Limits, expected: str
) -> None:
    assert judge_with_limits(repo, body, limits) == f"sandbox/probe: {expected}"


def test_native_crashes_name_the_signal(repo: RepoBuilder) -> None:
    message = judge_with_limits(repo, "import ctypes\nctypes.string_at(0)", Limits())
    assert message.startswith("sandbox/probe: the checker process was ended by SIGSEGV")


def test_limits_are_described_with_their_values() -> None:
    described: dict[str, Any] = {
        "memory": Limits().memory,
        "cpu": Limits().cpu,
        "file_size": Limits().file_size,
        "files": Limits().files,
    }
    assert described == {
        "memory": "memory limit of 2 GiB",
        "cpu": "CPU time limit of 120 s",
        "file_size": "file size limit of 16 MiB",
        "files": "limit of 256 open files",
    }


def test_a_worker_that_stops_reading_its_requests_cannot_hold_lvegit(repo: RepoBuilder) -> None:
    """The checker answers its first verdict itself, on the worker's channel, and never returns: the next
    request, larger than a pipe holds, found no reader, and lvegit's write waited for good."""
    lve_dir = probe_lve(
        repo,
        "for descriptor in range(3, 10):\n"
        "    try:\n"
        '        os.write(descriptor, b\'{"ok": true, "verdict": true}\\n\')\n'
        "    except OSError:\n"
        "        pass\n"
        "import time\n"
        "while True:\n"
        "    time.sleep(3600)",
    )
    # 5 s: its first verdict must come in time on a busy machine
    worker = CheckerWorker("sandbox/probe", lve_dir, SandboxSettings(call_timeout=5))
    try:
        checker = worker.build("Probe", {})
        prompt = [Message("12", Role.user)]
        # its own verdict, as it may give it
        assert checker.invoke_check(prompt, [*prompt, Message("3", Role.assistant)], {"a": 1, "b": 2})
        big = [*prompt, Message("x" * 300_000, Role.assistant)]
        with pytest.raises(CheckerError, match=r"the checker did not read its request within 5 s"):
            checker.invoke_check(prompt, big, {"a": 1, "b": 2})
    finally:
        worker.close()
