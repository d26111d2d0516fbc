"""`lvegit run` and `lvegit report` as users meet them: interrupted runs, reports, models without a
route, and output on a narrow terminal. Processes run for real where a terminal or a signal is the point."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path
from typing import Any

import pytest

from builders import RepoBuilder, instance
from servers import Running

INSTANCES = "repository/dummy/add/openai--gpt-4o-mini/instances/i.jsonl"


def interruptible() -> None:
    """Ctrl-C as a terminal delivers it: a test suite started in the background (`pytest &` in a script)
    ignores SIGINT, and its children would inherit that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def lvegit(*args: str, cwd: Path, **kwargs: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "lvegit", *args], cwd=cwd, preexec_fn=interruptible, **kwargs
    )


def many(repo: RepoBuilder, count: int) -> None:
    repo.lve(instances={"i.jsonl": [instance(str(n + 1), True, a=n, b=1) for n in range(count)]})


def test_ctrl_c_exits_130_and_says_how_to_resume(repo: RepoBuilder, adding: Running) -> None:
    adding.state.latency = 0.2
    many(repo, 40)
    process = lvegit(
        "run", "--all", "--concurrency", "2", "--report", "r.jsonl",
        cwd=repo.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    report = repo.root / "r.jsonl"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not (
        report.exists() and report.read_text().count('"complete"') >= 2
    ):
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    _out, err = process.communicate(timeout=20)
    assert process.returncode == 130
    assert err.decode().strip().splitlines()[-1] == (
        "lvegit: interrupted; finished attempts are in r.jsonl; continue with: "
        "lvegit run --all --concurrency 2 --report r.jsonl --resume"
    )
    summary = subprocess.run(
        [sys.executable, "-m", "lvegit", "report", "r.jsonl"], cwd=repo.root, capture_output=True, text=True
    )
    assert summary.returncode == 1
    assert summary.stderr.startswith("lvegit: r.jsonl: incomplete: ")
    assert summary.stderr.rstrip().endswith(
        "unfinished; continue with: lvegit run --all --concurrency 2 --report r.jsonl --resume"
    )
    assert "status started" not in summary.stdout  # unfinished attempts are not errors
    adding.state.latency = 0
    resumed = subprocess.run(
        [
            sys.executable,
            "-m",
            "lvegit",
            "run",
            "--all",
            "--concurrency",
            "2",
            "--report",
            "r.jsonl",
            "--resume",
        ],
        cwd=repo.root,
        capture_output=True,
        text=True,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert (
        resumed.stdout.splitlines()[-1]
        == "40 instances: 40 agree, 0 disagree, 0 with errors (40 attempts, 0 failed)"
    )


def test_new_on_a_terminal_asks_and_ctrl_c_exits_130(repo: RepoBuilder) -> None:
    """On a real terminal (a pty), `lvegit new` asks without --interactive; ^C typed there ends it."""
    pid, terminal = pty.fork()
    if pid == 0:  # pragma: no cover - the child becomes lvegit, the pty its controlling terminal
        os.chdir(repo.root)
        interruptible()
        os.execv(sys.executable, [sys.executable, "-m", "lvegit", "new"])
    shown = b""
    deadline = time.monotonic() + 20
    while b"Name (CATEGORY/NAME" not in shown and time.monotonic() < deadline:
        shown += os.read(terminal, 4096)
    # ^C is what Ctrl-C types; the terminal sends SIGINT. Typed again until the child exits: on a busy
    # machine the first one can arrive before the prompt blocks in its read, where readline swallows it
    # (this failed 9 of 20 times with two busy cores when it was typed once).
    ended, status, gone = 0, 0, False
    while not ended and time.monotonic() < deadline:
        if not gone:
            os.write(terminal, b"\x03")
        while not gone and select.select([terminal], [], [], 0.3)[0]:
            try:
                chunk = os.read(terminal, 4096)
            except OSError:  # the child is gone, and its end of the terminal with it
                chunk = b""
            gone = not chunk
            shown += chunk
        ended, status = os.waitpid(pid, os.WNOHANG)
        if gone and not ended:
            time.sleep(0.05)
    if not ended:  # still asking: fail, do not hang the suite
        os.kill(pid, signal.SIGKILL)
        _pid, status = os.waitpid(pid, 0)
    os.close(terminal)
    assert os.waitstatus_to_exitcode(status) == 130
    assert shown.decode().rstrip().endswith("lvegit: interrupted")


@pytest.mark.parametrize("command", [("list",), ("validate", "--all")])
def test_a_closed_pipe_ends_quietly(repo: RepoBuilder, command: tuple[str, ...]) -> None:
    for n in range(400):  # long names: more output than a pipe holds (64 KiB), however fast it is written
        repo.lve(f"cat/lve{n:03d}_{'x' * 150}")
    process = lvegit(*command, cwd=repo.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None
    process.stdout.readline()
    process.stdout.close()  # what `| head -1` does
    err = process.stderr.read() if process.stderr else b""
    assert (process.wait(timeout=20), err) == (141, b"")


def test_lves_whose_model_has_no_route_are_reported_and_the_rest_runs(
    repo: RepoBuilder, cli: Any, adding: Running
) -> None:
    repo.lve("cat/ok", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    for name in ("cat/llama1", "cat/llama2"):
        repo.lve(
            name,
            {"model": "meta/llama-3"},
            folder="meta--llama-3",
            instances={"i.jsonl": [instance("3", True, a=1, b=2)]},
        )
    repo.lve(
        "cat/mistral",
        {"model": "mistral/7b"},
        folder="mistral--7b",
        instances={"i.jsonl": [instance("3", True, a=1, b=2)]},
    )
    result = cli("run", "--all", cwd=repo.root)
    assert result.code == 1
    assert result.out.splitlines() == [
        "repository/cat/ok/openai--gpt-4o-mini/instances/i.jsonl:1  recorded safe  new: safe  agrees",
        "invalid: repository/cat/llama1/meta--llama-3: model 'meta/llama-3' cannot run here (see below)",
        "invalid: repository/cat/llama2/meta--llama-3: model 'meta/llama-3' cannot run here (see below)",
        "invalid: repository/cat/mistral/mistral--7b: model 'mistral/7b' cannot run here (see below)",
        "not run: 2 LVEs of model 'meta/llama-3':",
        "  no backend for model 'meta/llama-3': add it to lvegit.toml, for example",
        '    [models."meta/llama-3"]',
        '    backend = "transformers"',
        '    model = "<hub id or local directory>"',
        "not run: 1 LVE of model 'mistral/7b':",
        "  no backend for model 'mistral/7b': add it to lvegit.toml, for example",
        '    [models."mistral/7b"]',
        '    backend = "transformers"',
        '    model = "<hub id or local directory>"',
        "1 instance: 1 agree, 0 disagree, 0 with errors (1 attempt, 0 failed)",
    ]
    data = cli("run", "--all", "--format", "json", cwd=repo.root).json()
    assert [(u["model"], u["lves"]) for u in data["unroutable"]] == [
        ("meta/llama-3", ["repository/cat/llama1/meta--llama-3", "repository/cat/llama2/meta--llama-3"]),
        ("mistral/7b", ["repository/cat/mistral/mistral--7b"]),
    ]
    nothing = cli("run", "repository/cat/llama1", "repository/cat/mistral", cwd=repo.root)
    assert nothing.code == 2 and "'meta/llama-3'" in nothing.err and "'mistral/7b'" in nothing.err


def test_resume_refuses_another_run(repo: RepoBuilder, cli: Any, adding: Running) -> None:
    repo.lve("cat/a", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    repo.lve("cat/b", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    assert cli("run", "--all", "--report", "r.jsonl", cwd=repo.root).code == 0
    repeat = cli("run", "--all", "--repeat", "3", "--report", "r.jsonl", "--resume", cwd=repo.root)
    assert (repeat.code, repeat.err) == (
        2,
        "lvegit: error: --resume: r.jsonl is the report of another run (repeat 1 there, 3 here); resume it "
        "with the same selection and options, or choose another --report file\n",
    )
    narrower = cli("run", "repository/cat/a", "--report", "r.jsonl", "--resume", cwd=repo.root)
    assert narrower.code == 2 and 'lves ["repository/cat/a/openai--gpt-4o-mini", ' in narrower.err
    assert len(adding.state.requests) == 2


@pytest.mark.parametrize(
    "content",
    [
        b"root:x:0:0:root:/root:/bin/bash\n",
        b"",
        b'{"args": {}, "response": "3", "passed": true}\n',
        b"\xff\xfe",
    ],
    ids=["passwd", "empty", "instance-file", "binary"],
)
def test_report_refuses_files_that_are_not_run_reports(repo: RepoBuilder, cli: Any, content: bytes) -> None:
    (repo.root / "x.jsonl").write_bytes(content)
    result = cli("report", "x.jsonl", cwd=repo.root)
    assert (result.code, result.err) == (
        2,
        "lvegit: error: x.jsonl: not a run report (write one with lvegit run --report FILE)\n",
    )


@pytest.mark.parametrize("resume", [False, True])
def test_an_empty_report_is_a_run_that_never_started(
    repo: RepoBuilder, cli: Any, adding: Running, resume: bool
) -> None:
    """A run killed before it wrote its report's header leaves an empty file: it starts afresh there."""
    many(repo, 3)
    (repo.root / "r.jsonl").write_bytes(b"")
    options = ["--resume"] if resume else []
    result = cli("run", "--all", "--report", "r.jsonl", *options, cwd=repo.root)
    assert result.code == 0, result.err
    assert cli("report", "r.jsonl", cwd=repo.root).code == 0
    assert len(adding.state.requests) == 3


def test_progress_fits_a_narrow_terminal_and_shows_with_json(repo: RepoBuilder, adding: Running) -> None:
    adding.state.latency = 0.05
    many(repo, 30)
    main, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 60, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    process = lvegit(
        "run", "--all", "--concurrency", "2", "--format", "json",
        cwd=repo.root, stdout=subprocess.PIPE, stderr=terminal, env=env,
    )  # fmt: skip
    os.close(terminal)
    out, _ = process.communicate(timeout=60)
    shown = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(main)
    assert process.returncode == 0 and json.loads(out)["summary"]["agree"] == 30
    text = shown.decode()
    assert "running" in text and "30/30" in text
    assert text.count("\n") <= 2  # redrawn in place, never wrapped or scrolled
    visible = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)  # cursor hiding is no column
    frames = [frame for line in visible.split("\n") for frame in line.split("\r")]
    assert max(len(frame) for frame in frames) <= 60


def test_progress_shows_the_planned_total_before_any_attempt_ends(repo: RepoBuilder, adding: Running) -> None:
    """The bar once said 0/0 for as long as the first attempts were in flight."""
    adding.state.latency = 0.3
    many(repo, 5)
    main, terminal = pty.openpty()
    process = lvegit("run", "--all", cwd=repo.root, stdout=subprocess.DEVNULL, stderr=terminal)
    os.close(terminal)
    shown = b""
    while chunk := _read(main):
        shown += chunk
    os.close(main)
    assert process.wait(timeout=60) == 0
    counts = [(int(k), int(n)) for k, n in re.findall(r"(\d+)/(\d+)", shown.decode())]
    before_first_end = counts[: next(i for i, (k, _n) in enumerate(counts) if k > 0)]
    assert any(n > 0 for _k, n in before_first_end), counts
    assert counts[-1] == (5, 5)


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 65536)
    except OSError:  # the terminal's other end closed: the process ended
        return b""


def test_results_are_printed_as_they_come(repo: RepoBuilder, adding: Running) -> None:
    """A run's output is not held to its end (a corpus's results would all be kept): the first instance's
    line comes while the run goes on."""
    adding.state.latency = 0.2
    many(repo, 30)
    process = lvegit("run", "--all", "--concurrency", "1", cwd=repo.root, stdout=subprocess.PIPE)
    assert process.stdout is not None
    first = process.stdout.readline().decode()
    still_running = process.poll() is None  # 30 answers of 0.2 s one after another: about 6 s
    rest = process.stdout.read().decode()
    assert process.wait(timeout=60) == 0
    assert first.startswith("repository/dummy/add/openai--gpt-4o-mini/instances/i.jsonl:1 ") and still_running
    assert rest.splitlines()[-1].startswith("30 instances: 30 agree")


def scan_corpus(repo: RepoBuilder) -> None:
    """One LVE whose recording is unsafe (99 + 1 answered 101) and one instance recorded safe."""
    repo.lve(instances={"i.jsonl": [instance("101", False, a=99, b=1), instance("3", True, a=1, b=2)]})


def sums(body: dict[str, Any]) -> str:
    a, b = re.findall(r"\d+", body["messages"][-1]["content"])
    return str(int(a) + int(b))


def sarif_results(cli: Any, root: Path, report: str) -> tuple[int, str]:
    exported = cli("export", "--format", "sarif", report, "--output", "scan.sarif", cwd=root)
    assert exported.code == 0, exported.err
    return len(json.loads((root / "scan.sarif").read_text())["runs"][0]["results"]), exported.err


def test_a_scan_is_vulnerable_clean_or_incomplete_each_with_its_exit_code(
    repo: RepoBuilder, cli: Any, openai_server: Running
) -> None:
    """`run --model` (the scan guide's command): against a model that refuses everything, the answers
    differ from the unsafe recording, which is no finding (it once exited 1 with a SARIF of 0 results);
    an LVE that reproduces exits 1; attempts that could not run exit 4. The export counts its results."""
    scan_corpus(repo)
    openai_server.state.answer = sums  # every answer safe: the unsafe recording "disagrees"
    refused = cli("run", "--all", "--model", "openai/scanned", "--report", "clean.jsonl", cwd=repo.root)
    assert refused.code == 0, refused.out + refused.err
    assert refused.out.splitlines()[-1] == "clean: no LVE reproduced on openai/scanned"
    assert sarif_results(cli, repo.root, "clean.jsonl") == (
        0,
        "lvegit: 2 attempts read; 0 results (an LVE that reproduced on a model each) written to scan.sarif as sarif\n",
    )
    assert cli("report", "clean.jsonl", cwd=repo.root).code == 0

    openai_server.state.answer = lambda body: "101" if "99 + 1" in body["messages"][-1]["content"] else "3"
    found = cli("run", "--all", "--model", "openai/scanned", "--report", "found.jsonl", cwd=repo.root)
    assert found.code == 1
    assert found.out.splitlines()[-1] == "vulnerable: 1 LVE reproduced on openai/scanned"
    results, said = sarif_results(cli, repo.root, "found.jsonl")
    assert results == 1 and "1 result " in said
    assert cli("report", "found.jsonl", cwd=repo.root).code == 1

    openai_server.state.answer = sums
    openai_server.state.faults = [("status", 400)]
    failed = cli("run", "--all", "--model", "openai/scanned", cwd=repo.root)
    assert failed.code == 4, failed.out + failed.err
    assert failed.out.splitlines()[-1].startswith("incomplete: no LVE reproduced on openai/scanned")


def test_a_run_that_stops_before_its_first_attempt_leaves_no_report(
    repo: RepoBuilder, cli: Any, monkeypatch: pytest.MonkeyPatch, openai_server: Running
) -> None:
    """The scan guide's command run first without a key, then with one, as written: the second once said
    "scan.jsonl exists: pass --resume"."""
    scan_corpus(repo)
    openai_server.state.answer = sums
    key, url = os.environ["OPENAI_API_KEY"], os.environ["OPENAI_BASE_URL"]
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("OPENAI_BASE_URL")
    command = ("run", "--all", "--model", "openai/scanned", "--report", "scan.jsonl")
    assert cli(*command, cwd=repo.root).code == 2
    assert not (repo.root / "scan.jsonl").exists()
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    again = cli(*command, cwd=repo.root)
    assert again.code in (0, 1), again.out + again.err
    written = (repo.root / "scan.jsonl").read_text()
    assert written.startswith('{"lvegit_run": ') and written.count('"lvegit_run"') == 1  # one header, first
