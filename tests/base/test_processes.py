"""The one way lvegit starts a process: lvegit's own code, isolated, outside the repository, with an
environment from an allow-list, without our terminal."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from lvegit.base import processes

PROBE = (
    "import json, os, sys, lvegit; print(json.dumps({'lvegit': lvegit.__file__, 'cwd': os.getcwd(), "
    "'env': dict(os.environ), 'session': os.getsid(0) == os.getpid(), 'stdin': os.path.realpath("
    "'/proc/self/fd/0'), 'isolated': sys.flags.isolated}))"
)


def _probe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **kwargs: object) -> dict[str, object]:
    # A pull request's `lvegit/` folder and `sitecustomize.py` in the folder lvegit runs in.
    (tmp_path / "lvegit").mkdir()
    (tmp_path / "lvegit" / "__init__.py").write_text("raise SystemExit('the pull request ran')\n")
    (tmp_path / "sitecustomize.py").write_text("raise SystemExit('the pull request ran')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("SLACK_WEBHOOK_URL", "https://hooks.example/secret")
    monkeypatch.setenv("LANG", "C.UTF-8")
    command = [processes.lvegit_command("lvegit")[0], "-I", "-c", PROBE]
    started = processes.start(command, processes.environment(**kwargs), stdout=subprocess.PIPE)  # type: ignore[arg-type]
    out, _err = started.communicate(timeout=60)
    assert started.returncode == 0, out
    found: dict[str, object] = json.loads(out)
    return found


def test_a_started_process_runs_lvegits_code_outside_the_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = _probe(tmp_path, monkeypatch)
    assert not str(found["lvegit"]).startswith(str(tmp_path))
    assert found["cwd"] == processes.NEUTRAL_FOLDER
    assert found["isolated"] == 1


def test_a_started_process_gets_only_allow_listed_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = _probe(tmp_path, monkeypatch, extra={"LVEGIT_CHOSEN": "1"})
    env = found["env"]
    assert isinstance(env, dict)
    assert "SLACK_WEBHOOK_URL" not in env and "PYTHONPATH" not in env
    assert env["LANG"] == "C.UTF-8" and env["LVEGIT_CHOSEN"] == "1"
    assert set(env) <= {
        *processes.ENVIRONMENT_ALLOWLIST,
        "LVEGIT_CHOSEN",
        "LC_CTYPE",
    }  # Python may set LC_CTYPE


def test_a_variable_passes_only_where_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    found = _probe(tmp_path, monkeypatch, passing=["SLACK_WEBHOOK_URL"])
    env = found["env"]
    assert isinstance(env, dict) and env["SLACK_WEBHOOK_URL"] == "https://hooks.example/secret"


def test_a_started_process_has_no_terminal_and_reads_nothing_of_ours(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = _probe(tmp_path, monkeypatch)
    assert found["session"] is True  # a session of its own: no controlling terminal
    assert found["stdin"] == os.devnull
