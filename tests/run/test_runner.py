"""Live runs against an OpenAI-compatible server on 127.0.0.1, with the faults real APIs have."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from lvegit.checkers.core import LambdaChecker
from lvegit.models import openai_backend
from lvegit.run.rerun import wilson_interval

from builders import MULTI_RUN_TEST, MULTI_VARIABLE_TEST, RepoBuilder, instance
from servers import ProxyServer, Running, serve_proxy

INSTANCES = "repository/dummy/add/openai--gpt-4o-mini/instances/i.jsonl"


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def report_attempts(path: Path) -> list[dict[str, Any]]:
    """The attempt lines of a run report (its first line is the run's header)."""
    header, *attempts = lines(path)
    assert set(header) == {"lvegit_run"}
    return attempts


def test_rerun_agrees_and_sends_what_was_recorded(repo: RepoBuilder, cli: Any, adding: Running) -> None:
    rows = [
        instance("3", True, a=1, b=2),
        {**instance("100", True, a=99, b=1), "args": {"a": 99, "b": 1, "top_p": None}},
    ]
    repo.lve(test={"default_model_args": {"max_tokens": 5, "seed": 7}}, instances={"i.jsonl": rows})
    result = cli("run", "--all", cwd=repo.root)
    assert result.code == 1
    assert result.out.splitlines() == [
        f"{INSTANCES}:1  recorded safe  new: safe  agrees",
        f"{INSTANCES}:2  recorded safe  new: unsafe  DISAGREES",
        "2 instances: 1 agree, 1 disagree, 0 with errors (2 attempts, 0 failed)",
    ]
    requests = {r["messages"][0]["content"]: r for r in adding.state.requests}  # order depends on timing
    first = requests["Compute 1 + 2."]
    assert first["model"] == "gpt-4o-mini"
    assert first["messages"] == [{"role": "user", "content": "Compute 1 + 2."}]
    assert (first["temperature"], first["max_tokens"], first["seed"]) == (0.0, 5, 7)
    assert "top_p" not in requests["Compute 99 + 1."]  # recorded nulls are not sent


def test_holes_are_filled_in_order(repo: RepoBuilder, cli: Any, adding: Running) -> None:
    repo.lve(
        test=MULTI_VARIABLE_TEST,
        instances={"i.jsonl": [instance({"first": "3", "second": "3"}, True, a=1, b=2)]},
    )
    result = cli("run", "--all", "--format", "json", cwd=repo.root)
    assert result.json()["summary"]["agree"] == 1
    first, second = adding.state.requests
    assert [m["content"] for m in first["messages"]] == ["Answer in digits.", "Compute 1 + 2."]
    assert second["messages"][2] == {"role": "assistant", "content": "3"}
    assert second["messages"][3] == {"role": "user", "content": "Compute 2 + 1."}


def test_every_multi_run_prompt_runs_its_repetitions(repo: RepoBuilder, cli: Any, adding: Running) -> None:
    repo.lve(test=MULTI_RUN_TEST, instances={"i.jsonl": [instance(["3", "3", "3"], True, a=1, b=2)]})
    assert cli("run", "--all", cwd=repo.root).code == 0
    # the runs are conversations of their own: they are asked together, in any order
    assert sorted(r["messages"][0]["content"] for r in adding.state.requests) == [
        "Compute 1 + 2.",
        "Compute 1 + 2.",
        "Compute 2 + 1.",
    ]


def test_repeat_reports_reproduction_rate(repo: RepoBuilder, cli: Any, adding: Running) -> None:
    adding.state.fault_for = lambda number, body: (
        (
            "body",
            json.dumps(
                {
                    "id": "x",
                    "object": "chat.completion",
                    "created": 0,
                    "model": "m",
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": "4"},
                            "finish_reason": "stop",
                        }
                    ],
                }
            ).encode(),
        )
        if number % 2
        else None
    )
    repo.lve(instances={"i.jsonl": [instance("4", False, a=1, b=2)]})
    data = cli("run", "--all", "--repeat", "4", "--format", "json", cwd=repo.root).json()
    [result] = data["instances"]
    low, high = wilson_interval(2, 4)
    assert (result["runs"], result["unsafe"], result["unsafe_rate"]) == (4, 2, 0.5)
    assert result["interval_95"] == [round(low, 4), round(high, 4)] and result["agree"] is False
    text = cli("run", "--all", "--repeat", "4", cwd=repo.root).out
    assert text.splitlines() == [
        f"{INSTANCES}:1  recorded unsafe  new: 2/4 unsafe (95% CI 15%-85%)  DISAGREES",
        "1 instance: 0 agree, 1 disagree, 0 with errors (4 attempts, 0 failed)",
    ]


def test_a_slow_verdict_moves_its_lves_later_verdicts_off_the_event_loop(
    repo: RepoBuilder, cli: Any, adding: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """lvegit's own checkers judge on the loop (a thread hop costs more than their verdict); one that took
    long (a hostile lambda or pattern) must not stall every request in flight again and again."""
    # by response: a lambda verdict judged in a batch is given twice (its call collected, then finished)
    on_loop: dict[str, dict[str, bool]] = {"slow": {}, "fast": {}}
    judge = LambdaChecker.is_safe

    def recording(self: LambdaChecker, prompt: Any, response: Any, param_values: Any = None) -> bool:
        slow = param_values["a"] >= 100
        on_loop["slow" if slow else "fast"][response] = threading.current_thread() is threading.main_thread()
        if slow:
            time.sleep(0.05)
        return judge(self, prompt, response, param_values)

    monkeypatch.setattr(LambdaChecker, "is_safe", recording)
    repo.lve(
        "slow/lve", instances={"i.jsonl": [instance(str(n + 101), True, a=n + 100, b=1) for n in range(4)]}
    )
    repo.lve("fast/lve", instances={"i.jsonl": [instance(str(n + 1), True, a=n, b=1) for n in range(4)]})
    assert cli("run", "--all", "--concurrency", "1", cwd=repo.root).code == 0
    assert on_loop["slow"] == {"101": True, "102": False, "103": False, "104": False}
    # a quick LVE starts on the loop (later verdicts too, unless a busy machine makes one take 10 ms)
    assert len(on_loop["fast"]) == 4 and on_loop["fast"]["1"]


@pytest.mark.parametrize(
    "fault",
    [
        ("status", 429, {"Retry-After": "0.3"}),
        ("status", 500),
        ("status", 503, {"retry-after-ms": "100"}),
        ("body", b"this is not json"),
        ("body", b'{"choices": []}'),
        ("close",),
    ],
)
def test_transient_failures_are_retried(
    repo: RepoBuilder, cli: Any, adding: Running, fault: tuple[Any, ...], retry_waits: list[float]
) -> None:
    adding.state.faults = [fault, fault]
    repo.lve(instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    result = cli("run", "--all", "--report", "r.jsonl", cwd=repo.root)
    assert result.code == 0, result.out
    assert len(adding.state.requests) == 3
    [attempt] = [a for a in report_attempts(repo.root / "r.jsonl") if a["status"] == "complete"]
    assert (attempt["requests"], attempt["retries"], attempt["verdict"]) == (3, 2, True)
    first, second = retry_waits
    if len(fault) == 3:  # the server's Retry-After (seconds, or milliseconds) wins, with up to 10% jitter
        asked = 0.3 if "Retry-After" in fault[2] else 0.1
        assert asked <= first <= asked * 1.1 and asked <= second <= asked * 1.1
    else:  # exponential backoff with full jitter: up to 0.5 s, then up to 1 s
        assert 0 <= first <= 0.5 and 0 <= second <= 1.0


def test_timeouts_are_retried_then_recorded_as_errors(repo: RepoBuilder, cli: Any, adding: Running) -> None:
    (repo.root / "lvegit.toml").write_text(
        f'[models."openai/gpt-4o-mini"]\nbackend = "openai"\nmodel = "gpt-4o-mini"\n'
        f'base_url = "{adding.url}"\ntimeout = 0.3\n'
    )
    adding.state.fault_for = lambda number, body: (
        ("sleep", 1.0) if body["messages"][-1]["content"].startswith("Compute 5") else None
    )
    rows = [instance("3", True, a=1, b=2), instance("10", True, a=5, b=5)]
    repo.lve(instances={"i.jsonl": rows})
    result = cli("run", "--all", "--retries", "2", "--format", "json", cwd=repo.root)
    assert result.code == 4  # the service failed: no finding about the LVE
    first, second = result.json()["instances"]
    assert first["agree"] is True
    host = adding.url.removeprefix("http://").removesuffix("/v1")
    assert second["verdicts"] == [] and second["errors"] == [
        f"gave up after 3 requests: the request to {host} timed out"
    ]


def test_an_address_that_refuses_is_named_and_not_retried_for_long(
    repo: RepoBuilder, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")  # nothing listens on port 1
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    lve_dir = repo.lve()
    result = cli("record", str(lve_dir), "--param", "a=1", "--param", "b=2", "--retries", "10", cwd=repo.root)
    assert (result.code, result.out, result.err) == (
        4,
        "",
        "lvegit: error: gave up after 2 requests: connection refused by 127.0.0.1:1\n",
    )


def test_a_failing_service_exits_4_unless_there_is_also_a_finding(
    repo: RepoBuilder, cli: Any, adding: Running
) -> None:
    adding.state.fault_for = lambda number, body: (
        ("status", 400) if body["messages"][-1]["content"] == "Compute 7 + 7." else None
    )
    repo.lve("cat/refused", instances={"i.jsonl": [instance("14", True, a=7, b=7)]})
    assert cli("run", "--all", cwd=repo.root).code == 4
    repo.lve("cat/wrong", instances={"i.jsonl": [instance("100", True, a=99, b=1)]})  # the model says 101
    result = cli("run", "--all", cwd=repo.root)
    assert result.code == 1 and "1 disagree, 1 with errors" in result.out


def test_permanent_errors_are_not_retried(repo: RepoBuilder, cli: Any, adding: Running) -> None:
    adding.state.faults = [("status", 400)]
    repo.lve(instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    data = cli("run", "--all", "--format", "json", cwd=repo.root).json()
    assert data["instances"][0]["errors"] == ["HTTP 400: injected 400"]
    assert len(adding.state.requests) == 1


def test_concurrency_under_faults_loses_and_duplicates_nothing(
    repo: RepoBuilder, cli: Any, adding: Running
) -> None:
    adding.state.latency = 0.01
    adding.state.fault_for = lambda number, body: (
        ("status", 429, {"Retry-After": "0"})
        if number % 3 == 0
        else ("status", 502)
        if number % 7 == 0
        else None
    )
    rows = [instance(str(i + 1), True, a=i, b=1) for i in range(40)]
    lve_dir = repo.lve(instances={"i.jsonl": rows})
    options = ("--concurrency", "16", "--retries", "12", "--append", "--format", "json")
    data = cli("run", "--all", *options, "--report", "r.jsonl", cwd=repo.root).json()
    assert [i["errors"] for i in data["instances"] if i["errors"]] == []
    assert data["summary"] == {
        "instances": 40,
        "attempts": 40,
        "agree": 40,
        "disagree": 0,
        "error": 0,
        "skipped": 0,
        "failed_attempts": 0,
        "invalid_lves": 0,
    }
    stored = lines(lve_dir / "instances/i.jsonl")
    assert len(stored) == 80 and stored[:40] == rows
    keys = [row["run_info"]["idempotency_key"] for row in stored[40:]]
    assert len(set(keys)) == 40
    report = report_attempts(repo.root / "r.jsonl")
    assert sorted(a["status"] for a in report) == ["complete"] * 40 + ["started"] * 40
    again = cli("run", "--all", *options, cwd=repo.root).json()
    assert again["summary"]["attempts"] == 40  # the appended lines are output, not sources
    assert len(lines(lve_dir / "instances/i.jsonl")) == 80


def test_append_reads_each_instance_file_once(
    repo: RepoBuilder, cli: Any, adding: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Appending N lines must not read the growing file N times (it did: a run of 10,000 took minutes):
    its keys are read once, and after that only what other processes appended (here: nothing)."""
    from lvegit.lve.instances import InstanceKeys

    read: list[tuple[Path, int]] = []
    original = InstanceKeys.held

    def counting(self: InstanceKeys, path: Path, descriptor: int) -> set[str]:
        _keys, offset = self._seen.get(path, (set(), 0))
        read.append((path, os.fstat(descriptor).st_size - offset))
        return original(self, path, descriptor)

    monkeypatch.setattr(InstanceKeys, "held", counting)
    lve_dir = repo.lve(instances={"i.jsonl": [instance(str(n + 1), True, a=n, b=1) for n in range(30)]})
    size = (lve_dir / "instances/i.jsonl").stat().st_size
    assert cli("run", "--all", "--append", cwd=repo.root).code == 0
    assert sum(count for _path, count in read) == size
    assert {path for path, _count in read} == {lve_dir / "instances/i.jsonl"}
    assert len(lines(lve_dir / "instances/i.jsonl")) == 60


def test_runs_appending_at_once_append_each_rerun_once(repo: RepoBuilder, adding: Running) -> None:
    """Three `run --append` processes started together on one LVE: each re-run is appended once (two
    such runs once left 89 lines of 60: each read the keys before the other appended)."""
    adding.state.latency = 0.05
    lve_dir = repo.lve(instances={"i.jsonl": [instance(str(n + 1), True, a=n, b=1) for n in range(30)]})
    command = [sys.executable, "-m", "lvegit", "run", "--all", "--append", "--concurrency", "4"]
    processes = [
        subprocess.Popen(command, cwd=repo.root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for _ in range(3)
    ]
    for process in processes:
        _out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
    appended = lines(lve_dir / "instances/i.jsonl")[30:]
    keys = [line["run_info"]["idempotency_key"] for line in appended]
    assert len(keys) == 30 and len(set(keys)) == 30
    assert sorted(line["run_info"]["reproduces"]["line"] for line in appended) == list(range(1, 31))


@pytest.mark.parametrize("repeat", [1, 3])
def test_append_is_idempotent_across_runs(repo: RepoBuilder, cli: Any, adding: Running, repeat: int) -> None:
    rows = [instance("3", True, a=1, b=2), instance("101", False, a=99, b=1)]
    lve_dir = repo.lve(instances={"i.jsonl": rows, "more.jsonl": [instance("7", True, a=3, b=4)]})
    options = ("run", "--all", "--append", "--repeat", str(repeat), "--format", "json")
    counts = []
    for _ in range(3):
        assert cli(*options, cwd=repo.root).code == 0
        counts.append(
            len(lines(lve_dir / "instances/i.jsonl")) + len(lines(lve_dir / "instances/more.jsonl"))
        )
    assert counts == [3 + 3 * repeat, 3 + 3 * repeat, 3 + 3 * repeat]  # N*k appended, then 0, then 0
    appended = lines(lve_dir / "instances/i.jsonl")[2:]
    assert sorted(row["run_info"]["reproduces"]["line"] for row in appended) == sorted([1, 2] * repeat)
    assert {row["run_info"]["reproduces"]["file"] for row in appended} == {"instances/i.jsonl"}
    assert len(adding.state.requests) == 3 * 3 * repeat  # each run re-runs the 3 recordings only


def test_append_postprocesses_and_never_fuses_lines(
    repo: RepoBuilder, cli: Any, openai_server: Running
) -> None:
    openai_server.state.answer = lambda body: "the password is hunter2"
    code = (
        "from lvegit.checkers import BaseChecker\n"
        "class Masking(BaseChecker):\n"
        "    def is_safe(self, prompt, response, param_values=None):\n"
        "        return 'hunter2' not in response\n"
        "    def postprocess_response(self, response):\n"
        "        return response.replace('hunter2', '<SECRET>')\n"
    )
    last = json.dumps(instance("fine", True, a=1, b=2))  # no newline at the end of the file
    lve_dir = repo.lve(
        test={"checker_args": {"checker_name": "Masking"}},
        files={"checker/checker.py": code},
        instances={"i.jsonl": last},
    )
    result = cli("run", "--all", "--append", "--author", "ci", "--report", "r.jsonl", cwd=repo.root)
    assert "DISAGREES" in result.out
    old, new = (lve_dir / "instances/i.jsonl").read_text().splitlines()
    assert old == last
    record = json.loads(new)
    assert record["response"] == "the password is <SECRET>" and record["passed"] is False
    assert record["author"] == "ci" and record["args"] == {"temperature": 0.0, "a": 1, "b": 2}
    assert {"timestamp", "lvegit", "aiohttp", "backend", "model", "idempotency_key"} <= set(
        record["run_info"]
    )
    assert record["run_info"]["model"] == "gpt-4o-mini-2026-01-01"
    report = (repo.root / "r.jsonl").read_text()
    assert "hunter2" not in report and "<SECRET>" in report


def test_append_with_another_model_is_refused(repo: RepoBuilder, cli: Any, openai_server: Running) -> None:
    repo.lve(instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    result = cli("run", "--all", "--append", "--model", "openai/gpt-4o", cwd=repo.root)
    assert result.code == 2 and "create the LVE for the other model" in result.err


def test_model_override_and_routing_file(
    repo: RepoBuilder, cli: Any, adding: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.setenv("LOCAL_API_KEY", "sk-local")
    (repo.root / "lvegit.toml").write_text(
        '[models."meta/llama-3-8b"]\nbackend = "openai"\nmodel = "llama3:8b"\n'
        f'base_url = "{adding.url}"\napi_key_env = "LOCAL_API_KEY"\n'
    )
    repo.lve(instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    result = cli("run", "--all", "--model", "meta/llama-3-8b", "--format", "json", cwd=repo.root)
    assert result.json()["summary"]["agree"] == 1
    assert adding.state.requests[0]["model"] == "llama3:8b"
    missing = cli("run", "--all", "--model", "mistral/7b", cwd=repo.root)
    assert missing.code == 2 and "no backend for model 'mistral/7b': add it to lvegit.toml" in missing.err


def test_requests_carry_the_key_and_the_organization_and_project_billed(
    repo: RepoBuilder, cli: Any, adding: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_ORG_ID", "org-lvegit")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-lvegit")
    repo.lve(instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    assert cli("run", "--all", cwd=repo.root).code == 0
    [headers] = adding.state.headers
    assert headers["Authorization"] == "Bearer sk-loopback-test-key"
    assert (headers["OpenAI-Organization"], headers["OpenAI-Project"]) == ("org-lvegit", "proj-lvegit")
    assert adding.state.paths == ["/v1/chat/completions"]


def test_requests_go_through_the_proxy_the_environment_names(
    repo: RepoBuilder, cli: Any, adding: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HTTP_PROXY with credentials in its URL, as the openai client honours it; NO_PROXY exempts a host."""
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    repo.lve(instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    proxy = ProxyServer(target=adding.url.removesuffix("/v1"))
    for proxy_url in serve_proxy(proxy):
        monkeypatch.setenv("HTTP_PROXY", proxy_url.replace("http://", "http://user:secret@"))
        monkeypatch.setenv("NO_PROXY", "localhost")
        monkeypatch.setenv("OPENAI_BASE_URL", "http://model.test/v1")  # resolvable by the proxy alone
        assert cli("run", "--all", cwd=repo.root).code == 0
        assert proxy.requests == [
            (
                "POST http://model.test/v1/chat/completions",
                "Basic " + base64.b64encode(b"user:secret").decode(),
            )
        ]
        monkeypatch.setenv("OPENAI_BASE_URL", adding.url)
        monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
        assert cli("run", "--all", cwd=repo.root).code == 0
        assert len(proxy.requests) == 1 and len(adding.state.requests) == 2


def test_a_live_run_does_not_import_the_openai_client(repo: RepoBuilder, adding: Running) -> None:
    """Importing it takes longer than the rest of a short run: chat requests go out without it."""
    repo.lve(instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    program = (
        "import atexit, sys; atexit.register(lambda: print(sorted(m for m in ('openai', 'httpx') if m in "
        "sys.modules), file=sys.stderr)); from lvegit.cli import main; main(['run', '--all'])"
    )
    ran = subprocess.run([sys.executable, "-c", program], cwd=repo.root, capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    assert ran.stderr.splitlines()[-1] == "[]" and "1 agree" in ran.stdout


def test_an_answer_past_the_size_limit_is_refused_as_malformed(
    repo: RepoBuilder, cli: Any, adding: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(openai_backend, "MAX_BODY_BYTES", 4096)
    adding.state.faults = [("body", b"x" * 5000)] * 20
    repo.lve(instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    data = cli("run", "--all", "--format", "json", cwd=repo.root).json()
    [error] = data["instances"][0]["errors"]
    assert error.startswith("gave up after") and error.endswith(
        "malformed response: the body is over 4,096 bytes"
    )


def test_azure_settings_reach_the_deployment(
    repo: RepoBuilder, cli: Any, adding: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", adding.url.removesuffix("/v1"))
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "azure-key")
    repo.lve(instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    assert cli("run", "--all", cwd=repo.root).code == 0
    assert adding.state.paths[0].startswith("/openai/deployments/gpt-4o-mini/chat/completions?api-version=")


def test_without_a_key_running_is_a_usage_error(
    repo: RepoBuilder, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AZURE_OPENAI_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    repo.lve(instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    result = cli("run", "--all", cwd=repo.root)
    assert (result.code, result.err) == (
        2,
        "lvegit: error: model 'openai/gpt-4o-mini' needs OPENAI_API_KEY (or OPENAI_BASE_URL for a compatible server)\n",
    )


def test_shards_split_the_lves(repo: RepoBuilder, cli: Any, adding: Running) -> None:
    for index in range(12):
        repo.lve(f"cat/lve{index}", instances={"i.jsonl": [instance(str(index + 2), True, a=index, b=2)]})
    seen = []
    for shard in ("1/3", "2/3", "3/3"):
        data = cli("run", "--all", "--shard", shard, "--format", "json", cwd=repo.root).json()
        seen.append({i["lve"] for i in data["instances"]})
    assert sum(len(s) for s in seen) == 12 and len(set().union(*seen)) == 12
    assert all(seen)
    assert cli("run", "--all", "--shard", "4/3", cwd=repo.root).code == 2
    for shard in ("1/3", "2/3", "3/3"):
        cli("run", "--all", "--shard", shard, "--report", f"shard-{shard[0]}.jsonl", cwd=repo.root)
    merged = cli(
        "report", "shard-1.jsonl", "shard-2.jsonl", "shard-3.jsonl", "--format", "json", cwd=repo.root
    )
    summary = merged.json()["summary"]
    assert summary == {
        "instances": 12,
        "attempts": 12,
        "agree": 12,
        "disagree": 0,
        "error": 0,
        "skipped": 0,
        "failed_attempts": 0,
        "invalid_lves": 0,
    }
    assert merged.code == 0
    assert {i["lve"] for i in merged.json()["instances"]} == set().union(*seen)


def test_report_resume_and_existing_report(repo: RepoBuilder, cli: Any, adding: Running) -> None:
    repo.lve(instances={"i.jsonl": [instance("3", True, a=1, b=2), instance("5", True, a=2, b=3)]})
    assert cli("run", "--all", "--report", "r.jsonl", cwd=repo.root).code == 0
    assert len(adding.state.requests) == 2
    refused = cli("run", "--all", "--report", "r.jsonl", cwd=repo.root)
    assert refused.code == 2 and "pass --resume" in refused.err
    assert cli("run", "--all", "--report", "r.jsonl", "--resume", cwd=repo.root).code == 0
    assert len(adding.state.requests) == 2  # nothing redone
    by_attempt: dict[str, list[str]] = {}
    for attempt in report_attempts(repo.root / "r.jsonl"):
        by_attempt.setdefault(attempt["id"], []).append(attempt["status"])
    # Each attempt started once and completed once, in that order (attempts may interleave).
    assert list(by_attempt.values()) == [["started", "complete"], ["started", "complete"]]
    assert cli("run", "--all", "--resume", cwd=repo.root).code == 2


def test_offline_models_are_explicit(repo: RepoBuilder, cli: Any) -> None:
    repo.lve(instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    data = cli("run", "--all", "--model", "offline/constant:3", "--format", "json", cwd=repo.root).json()
    assert data["summary"]["agree"] == 1
    assert cli("run", "--all", "--model", "offline/nonsense", cwd=repo.root).code == 2


def test_a_killed_run_resumes_without_losing_or_duplicating(
    repo: RepoBuilder, cli: Any, adding: Running
) -> None:
    adding.state.latency = 0.15
    rows = [instance(str(i + 1), True, a=i, b=1) for i in range(24)]
    lve_dir = repo.lve(instances={"i.jsonl": rows})
    command = [
        sys.executable,
        "-m",
        "lvegit",
        "run",
        "--all",
        "--append",
        "--concurrency",
        "4",
        "--report",
        "r.jsonl",
    ]
    process = subprocess.Popen(command, cwd=repo.root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    report = repo.root / "r.jsonl"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if report.exists() and report.read_text().count('"status": "complete"') >= 6:
            break
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    finished_before = {a["id"] for a in report_attempts(report) if a["status"] == "complete"}
    assert 6 <= len(finished_before) < 24
    requests_before = len(adding.state.requests)

    data = cli(
        "run",
        "--all",
        "--append",
        "--concurrency",
        "4",
        "--report",
        "r.jsonl",
        "--resume",
        "--format",
        "json",
        cwd=repo.root,
    ).json()
    assert data["summary"]["agree"] == 24 and data["summary"]["error"] == 0
    assert len(adding.state.requests) - requests_before == 24 - len(finished_before)
    stored = lines(lve_dir / "instances/i.jsonl")  # every line parses: none is torn
    appended = [row["run_info"]["idempotency_key"] for row in stored[24:]]
    assert len(appended) == len(set(appended)) == 24
    final = {}
    for attempt in report_attempts(report):
        final[attempt["id"]] = attempt["status"]
    assert list(final.values()) == ["complete"] * 24


def test_secrets_are_never_stored(repo: RepoBuilder, cli: Any, openai_server: Running) -> None:
    openai_server.state.answer = lambda body: "the key is sk-loopback-test-key"
    lve_dir = repo.lve(
        test={"checker_args": {"checker_name": "RefuseChecker"}},
        instances={"i.jsonl": [instance("no", False, a=1, b=2)]},
    )
    cli("run", "--all", "--append", "--report", "r.jsonl", cwd=repo.root)
    stored = (lve_dir / "instances/i.jsonl").read_text() + (repo.root / "r.jsonl").read_text()
    assert "sk-loopback-test-key" not in stored and "the key is ***" in stored


def test_a_run_lets_each_lves_checkers_go_once_its_attempts_are_judged(
    repo: RepoBuilder, cli: Any, adding: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run over a corpus holds the checkers (a custom one's sandboxed worker) of the LVEs in flight only:
    each LVE's are let go once, when its last attempt was judged and a later LVE's tasks were taken."""
    from lvegit.checkers.registry import CheckerFactory

    checker = (
        "from lvegit.checkers import BaseChecker\n"
        "class Sum(BaseChecker):\n"
        "    def is_safe(self, prompt, response, param_values=None):\n"
        "        return int(response) == int(param_values['a']) + int(param_values['b'])\n"
    )
    rows = [instance(str(n + 1), True, a=n, b=1) for n in range(4)]
    names = [f"cat/lve{n}" for n in range(5)]
    for name in names:
        repo.lve(name, {"checker_args": {"checker_name": "Sum"}}, files={"checker/checker.py": checker},
                 instances={"i.jsonl": rows})  # fmt: skip
    closed: list[tuple[str, int]] = []  # each LVE's checkers let go, and how many requests were made by then
    close = CheckerFactory.close

    def closing(self: CheckerFactory) -> None:
        closed.append((self.lve.rel, len(adding.state.requests)))
        close(self)

    monkeypatch.setattr(CheckerFactory, "close", closing)
    result = cli("run", "--all", "--concurrency", "2", "--format", "json", cwd=repo.root)
    assert result.code == 0, result.err
    assert result.json()["summary"]["agree"] == 20
    assert sorted(rel for rel, _made in closed) == sorted(
        f"repository/{n}/openai--gpt-4o-mini" for n in names
    )
    assert closed[0][1] < 20  # the first LVE's went while later LVEs were still being asked
