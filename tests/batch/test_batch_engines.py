"""`lvegit run --batch` against the Files and Batches APIs of a loopback server, through the real openai
client; `--batch-out` and `--batch-in` with output files written the way `vllm run-batch` writes them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from builders import JUDGED_TEST, MULTI_RUN_TEST, MULTI_VARIABLE_TEST, RepoBuilder, instance
from servers import Running, last_user_text, model_and_judge, run_batch_file

INSTANCES = "repository/dummy/add/openai--gpt-4o-mini/instances/i.jsonl"
BATCH = ("run", "--all", "--batch", "--report", "r.jsonl", "--format", "json")


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def uploaded(running: Running, number: int) -> list[dict[str, Any]]:
    """The input lines of the number-th batch created (1-based)."""
    batch = running.state.created()[number - 1]
    return [json.loads(line) for line in running.state.files[batch["input_file_id"]].splitlines()]


def adder(body: dict[str, Any]) -> str:
    """What the offline engine answers: the sum asked for."""
    a, b = body["messages"][-1]["content"].removeprefix("Compute ").removesuffix(".").split(" + ")
    return str(int(a) + int(b))


def adder_lve(repo: RepoBuilder, count: int = 3) -> Path:
    """Instances 1 + 1 ... (safe), the last one recorded with a wrong sum (the adder answers right)."""
    rows = [instance(str(n + 2), True, a=n + 1, b=1) for n in range(count - 1)]
    return repo.lve(instances={"i.jsonl": [*rows, instance("0", False, a=count, b=1)]})


def test_a_batch_run_sends_what_a_live_run_sends_and_judges_alike(
    repo: RepoBuilder, cli: Any, adding: Running
) -> None:
    adder_lve(repo)
    live = cli("run", "--all", "--format", "json", cwd=repo.root)
    sent_live = sorted(json.dumps(body, sort_keys=True) for body in adding.state.requests)
    batch = cli(*BATCH, cwd=repo.root)
    assert (batch.code, live.code) == (1, 1)
    assert batch.json()["instances"] == live.json()["instances"]
    assert batch.json()["summary"] == {**live.json()["summary"], "waiting": 0}
    assert sorted(json.dumps(line["body"], sort_keys=True) for line in uploaded(adding, 1)) == sent_live
    assert {line["url"] for line in uploaded(adding, 1)} == {"/v1/chat/completions"}
    assert adding.state.api_calls == [
        "POST /v1/files",
        "POST /v1/batches",
        "GET /v1/batches/batch_1",  # validating -> in_progress
        "GET /v1/batches/batch_1",  # -> finalizing
        "GET /v1/batches/batch_1",  # -> completed
        "GET /v1/files/file-batch_1-output/content",
    ]
    [created] = adding.state.created()
    assert created["endpoint"] == "/v1/chat/completions" and created["completion_window"] == "24h"
    report = lines(repo.root / "r.jsonl")
    run_id = report[0]["lvegit_run"]["id"]
    assert created["metadata"] == {"lvegit_run": run_id, "lvegit_batch": "1/round-1-1.jsonl"}
    batches = [line["lvegit_batch"] for line in report if "lvegit_batch" in line]
    assert [(b["id"], b["status"], b["requests"]) for b in batches] == [
        ("batch_1", "validating", 3),
        ("batch_1", "completed", 3),
    ]
    attempts = [line for line in report if line.get("status") == "complete"]
    assert len(attempts) == 3
    assert {a["backend_details"]["batch"] for a in attempts} == {"batch_1"}
    assert {a["resolved_model"] for a in attempts} == {"gpt-4o-mini-2026-01-01"}
    assert batch.err.splitlines()[0] == "lvegit: round 1: batch batch_1 created, 3 requests to gpt-4o-mini"


def test_multi_step_conversations_go_in_rounds(repo: RepoBuilder, cli: Any, adding: Running) -> None:
    two = {"i.jsonl": [instance({"first": "3", "second": "3"}, True, a=1, b=2)]}
    repo.lve("dummy/two", test=MULTI_VARIABLE_TEST, instances=two)
    repo.lve(
        "dummy/runs", test=MULTI_RUN_TEST, instances={"i.jsonl": [instance(["3", "3", "3"], True, a=1, b=2)]}
    )
    result = cli(*BATCH, cwd=repo.root)
    assert result.code == 0, result.err
    assert result.json()["summary"]["agree"] == 2
    first, second = uploaded(adding, 1), uploaded(adding, 2)
    # round 1: the first hole of the two-step conversation, and every run of the multi-run prompt at once
    assert sorted(line["body"]["messages"][-1]["content"] for line in first) == [
        "Compute 1 + 2.",
        "Compute 1 + 2.",
        "Compute 1 + 2.",
        "Compute 2 + 1.",
    ]
    # round 2: the second hole, after the first one's completion
    [follow_up] = second
    assert follow_up["body"]["messages"] == [
        {"role": "system", "content": "Answer in digits."},
        {"role": "user", "content": "Compute 1 + 2."},
        {"role": "assistant", "content": "3"},
        {"role": "user", "content": "Compute 2 + 1."},
    ]
    assert len(adding.state.created()) == 2


def test_failed_requests_go_again_in_a_follow_up_batch(
    repo: RepoBuilder, cli: Any, adding: Running, retry_waits: list[float]
) -> None:
    adder_lve(repo, 4)
    seen: dict[str, int] = {}

    def fault(line: dict[str, Any]) -> Any:
        seen[line["custom_id"]] = seen.get(line["custom_id"], 0) + 1
        content = line["body"]["messages"][-1]["content"]
        if content == "Compute 1 + 1.":
            return ("status", 500)  # fails every time
        if content == "Compute 2 + 1." and seen[line["custom_id"]] == 1:
            return ("status", 429)  # fails once
        if content == "Compute 3 + 1.":
            return ("status", 400)  # a bad request: final
        return None

    adding.state.batch_line_fault = fault
    result = cli(*BATCH, "--retries", "2", cwd=repo.root)
    assert result.code == 1, result.out
    by_line = {r["line"]: r for r in result.json()["instances"]}
    assert by_line[1]["errors"] == ["gave up after 3 batches: HTTP 500: injected 500"]
    assert by_line[2]["errors"] == [] and by_line[2]["verdicts"] == [True]
    assert by_line[3]["errors"] == ["HTTP 400: injected 400"]
    assert by_line[4]["verdicts"] == [True]
    assert [len(uploaded(adding, n)) for n in (1, 2, 3)] == [4, 2, 1]
    assert retry_waits  # the polls waited (recorded here, not slept)


@pytest.mark.parametrize(
    ("outcome", "second_round", "error"),
    [
        ("expired", 1, None),  # the unanswered half goes again, and is answered
        ("cancelled", 0, "batch batch_1 was cancelled"),
        ("failed", 0, "batch batch_1 failed (invalid_request: injected failure)"),
    ],
)
def test_how_a_batch_ended_is_reported_per_instance(
    repo: RepoBuilder, cli: Any, adding: Running, outcome: str, second_round: int, error: str | None
) -> None:
    adder_lve(repo, 2)
    adding.state.batch_outcome = lambda number: outcome if number == 1 else "completed"
    result = cli(*BATCH, cwd=repo.root)
    results = result.json()["instances"]
    created = adding.state.created()
    assert [batch["status"] for batch in created] == [outcome] + ["completed"] * second_round
    if error is None:
        assert [r["errors"] for r in results] == [[], []]
        assert [line["custom_id"] for line in uploaded(adding, 2)] == [uploaded(adding, 1)[1]["custom_id"]]
    else:
        answered = 1 if outcome == "cancelled" else 0  # a cancelled batch answered half its requests
        assert [r["errors"] for r in results][answered:] == [[error]] * (2 - answered)


def test_failed_requests_go_live_with_fallback_live(repo: RepoBuilder, cli: Any, adding: Running) -> None:
    adder_lve(repo, 2)
    adding.state.batch_outcome = lambda _number: "failed"
    result = cli(*BATCH, "--batch-fallback", "live", cwd=repo.root)
    assert result.json()["summary"]["error"] == 0
    assert len(adding.state.created()) == 1 and len(adding.state.requests) == 2
    assert "round 2: 2 failed requests made live" in result.err
    report = [line for line in lines(repo.root / "r.jsonl") if line.get("status") == "complete"]
    assert {a["backend_details"].get("batch_fallback") for a in report} == {"live"}


def test_api_calls_are_retried_after_rate_limits(
    repo: RepoBuilder, cli: Any, adding: Running, retry_waits: list[float]
) -> None:
    adder_lve(repo, 2)
    adding.state.api_faults = [("status", 429, {"Retry-After": "7"}), ("status", 503)]
    result = cli(*BATCH, cwd=repo.root)
    assert result.json()["summary"]["agree"] == 1
    assert adding.state.api_calls[:3] == ["POST /v1/files"] * 3
    assert 7 <= retry_waits[0] <= 7.7  # Retry-After, with a little jitter


def test_an_api_that_refuses_ends_the_run_with_the_call_named(
    repo: RepoBuilder, cli: Any, adding: Running
) -> None:
    adder_lve(repo, 1)
    adding.state.api_faults = [("status", 401)]
    result = cli(*BATCH, cwd=repo.root)
    assert result.code == 4  # a service failed: no finding
    assert (
        result.err.strip().splitlines()[-1]
        == "lvegit: error: uploading round-1-1.jsonl: HTTP 401: injected 401"
    )


def test_a_killed_run_resumes_its_batch_without_sending_it_again(repo: RepoBuilder, adding: Running) -> None:
    """Killed while the batch is in progress (a closed laptop): --resume waits for the same batch."""
    adder_lve(repo, 5)
    adding.state.hold.set()  # the batch stays in_progress
    command = [sys.executable, "-m", "lvegit", *BATCH, "--batch-poll", "0.02"]
    env = {**os.environ, "OPENAI_BASE_URL": adding.url, "OPENAI_API_KEY": "k"}
    process = subprocess.Popen(
        command, cwd=repo.root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    report = repo.root / "r.jsonl"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(adding.state.api_calls) < 5:
        time.sleep(0.02)
    assert '"lvegit_batch"' in report.read_text()  # written as soon as the batch was created
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=10)
    adding.state.hold.clear()
    resumed = subprocess.run([*command, "--resume"], cwd=repo.root, env=env, capture_output=True, text=True)
    assert resumed.returncode == 1, resumed.stderr  # the recorded "0" for 5 + 1 disagrees
    assert json.loads(resumed.stdout)["summary"] == {
        "instances": 5, "attempts": 5, "agree": 4, "disagree": 1, "error": 0, "skipped": 0,
        "failed_attempts": 0, "invalid_lves": 0, "waiting": 0,
    }  # fmt: skip
    assert len(adding.state.created()) == 1
    assert adding.state.api_calls.count("POST /v1/files") == 1
    statuses = [line["status"] for line in lines(report) if "status" in line and "id" in line]
    assert statuses.count("complete") == 5


def test_a_batch_cancelled_by_its_owner_ends_its_unanswered_attempts(
    repo: RepoBuilder, adding: Running
) -> None:
    """Someone cancels the batch (the dashboard, the API) while lvegit waits for it: what it answered
    before counts, the rest ends with the reason, and nothing is sent again."""
    import openai

    adder_lve(repo, 4)
    adding.state.hold.set()
    command = [sys.executable, "-m", "lvegit", *BATCH, "--batch-poll", "0.02"]
    env = {**os.environ, "OPENAI_BASE_URL": adding.url, "OPENAI_API_KEY": "k"}
    process = subprocess.Popen(
        command, cwd=repo.root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(adding.state.api_calls) < 5:
        time.sleep(0.02)
    cancelling = openai.OpenAI(base_url=adding.url, api_key="k").batches.cancel("batch_1")
    assert cancelling.status == "cancelling"
    adding.state.hold.clear()
    out, err = process.communicate(timeout=30)
    results = json.loads(out)["instances"]
    cancelled = ["batch batch_1 was cancelled"]
    assert [r["errors"] for r in results] == [[], [], cancelled, cancelled]
    assert "batch batch_1: cancelled (2/4 requests done)" in err.decode()
    assert len(adding.state.created()) == 1


def test_a_batch_created_but_not_written_down_is_found_again(
    repo: RepoBuilder, cli: Any, adding: Running
) -> None:
    """Stopped between creating the batch and writing its id: the batch's metadata finds it, through the
    pages of the batch list."""
    adder_lve(repo, 2)
    report = repo.root / "r.jsonl"
    assert cli(*BATCH, cwd=repo.root).code == 1
    # keep the header only, as if lvegit had stopped right after creating the batch; others' come after
    report.write_text(report.read_text().splitlines()[0] + "\n")
    for number in range(150):
        adding.state.batches[f"other_{number}"] = {**adding.state.created()[0], "id": f"other_{number}"}
        adding.state.batches[f"other_{number}"]["metadata"] = {}
    result = cli(*BATCH, "--resume", cwd=repo.root)
    assert result.code == 1 and result.json()["summary"]["attempts"] == 2
    assert "round 1: batch batch_1 found again, 2 requests to gpt-4o-mini" in result.err
    assert adding.state.api_calls.count("POST /v1/batches") == 1
    assert any(call.startswith("GET /v1/batches?") and "after=" in call for call in adding.state.api_calls)


def test_ten_thousand_attempts_lose_and_duplicate_nothing(
    repo: RepoBuilder, cli: Any, adding: Running
) -> None:
    adding.state.answer = last_user_text
    checker = {"checker_name": "LambdaChecker", "func": "lambda r, a, b: r.startswith('Compute')"}
    rows = [instance(f"Compute {n} + 1.", True, a=n, b=1) for n in range(2500)]
    for name in ("a/one", "a/two", "b/one", "b/two"):
        repo.lve(name, test={"checker_args": checker}, instances={"i.jsonl": rows})
    result = cli(*BATCH, "--append", cwd=repo.root)
    assert result.code == 0, result.err
    assert result.json()["summary"]["agree"] == 10_000
    [request_ids] = [{line["custom_id"] for line in uploaded(adding, 1)}]
    assert len(request_ids) == 10_000
    for name in ("a/one", "a/two", "b/one", "b/two"):
        stored = lines(repo.root / "repository" / name / "openai--gpt-4o-mini/instances/i.jsonl")
        appended = stored[2500:]
        assert len(appended) == 2500
        assert sorted(row["run_info"]["reproduces"]["line"] for row in appended) == list(range(1, 2501))
        assert {row["run_info"]["batch"] for row in appended} == {"batch_1"}
    again = cli(
        "run", "--all", "--batch", "--report", "again.jsonl", "--append", "--format", "json", cwd=repo.root
    )
    assert again.json()["summary"]["agree"] == 10_000
    for name in ("a/one", "b/two"):
        assert len(lines(repo.root / "repository" / name / "openai--gpt-4o-mini/instances/i.jsonl")) == 5000


def test_offline_rounds_through_batch_files(repo: RepoBuilder, cli: Any) -> None:
    two = {"i.jsonl": [instance({"first": "3", "second": "3"}, True, a=1, b=2)]}
    repo.lve("dummy/two", test=MULTI_VARIABLE_TEST, instances=two)
    adder_lve(repo, 2)

    first = cli("run", "--all", "--batch-out", "round-1.jsonl", cwd=repo.root)
    assert first.code == 0, first.err
    assert first.out.splitlines()[-6:] == [
        "0 instances: 0 agree, 0 disagree, 0 with errors (0 attempts, 0 failed)",
        "3 attempts wait for the next round",
        "wrote 3 requests to round-1.jsonl; run them through the engine,",
        "for example:  vllm run-batch -i round-1.jsonl -o OUTPUT.jsonl --model gpt-4o-mini",
        "then continue with:",
        "  lvegit run --all --batch-in OUTPUT.jsonl --batch-out round-2.jsonl",
    ]
    out_1 = run_batch_file(repo.root / "round-1.jsonl", adder)
    second = cli("run", "--all", "--batch-in", str(out_1), "--batch-out", "round-2.jsonl", cwd=repo.root)
    assert second.code == 1  # the adder LVE's last instance disagrees
    assert "2 instances: 1 agree, 1 disagree, 0 with errors (2 attempts, 0 failed)" in second.out
    assert "1 attempt waits for the next round" in second.out
    out_2 = run_batch_file(repo.root / "round-2.jsonl", adder)
    third = cli(
        "run",
        "--all",
        "--batch-in",
        str(out_1),
        "--batch-in",
        str(out_2),
        "--batch-out",
        "round-3.jsonl",
        "--format",
        "json",
        cwd=repo.root,
    )
    assert third.json()["summary"]["agree"] == 2 and third.json()["summary"]["waiting"] == 0
    assert third.json()["batch"]["next"] == "every attempt has ended: no requests are left to send"
    assert not (repo.root / "round-3.jsonl").exists()


def test_batch_in_alone_reports_missing_and_bad_answers(repo: RepoBuilder, cli: Any) -> None:
    adder_lve(repo, 2)
    cli("run", "--all", "--batch-out", "round-1.jsonl", cwd=repo.root)
    output = run_batch_file(repo.root / "round-1.jsonl", adder)
    kept = output.read_text().splitlines()[:1]
    foreign = json.dumps(
        {"custom_id": "someone-else/0.1", "response": {"status_code": 200, "body": {}}, "error": None}
    )
    output.write_text("\n".join([*kept, "{torn", foreign]) + "\n")
    result = cli("run", "--all", "--batch-in", str(output), cwd=repo.root)
    assert result.code == 1
    assert result.out.splitlines()[1:] == [
        f"{INSTANCES}:2  recorded unsafe  1 failed attempt: no answer to its request "
        + lines(repo.root / "round-1.jsonl")[1]["custom_id"]
        + " in the batch output",
        "2 instances: 1 agree, 0 disagree, 1 with errors (2 attempts, 1 failed)",
        f"batch output: {output}:2: invalid JSON: Expecting property name enclosed in double quotes (line 2, column 2)",
        "1 answer in the batch output answers no attempt of this run",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--batch",), "--batch needs --report FILE"),
        (("--batch", "--report", "r.jsonl", "--batch-out", "x.jsonl"), "choose one"),
        (("--batch-fallback", "live"), "--batch-fallback applies to batch runs"),
        (("--batch", "--report", "r.jsonl", "--model", "offline/echo"), "routed to the offline backend"),
    ],
)
def test_batch_options_that_cannot_work_are_refused(
    repo: RepoBuilder, cli: Any, adding: Running, args: tuple[str, ...], message: str
) -> None:
    adder_lve(repo, 1)
    result = cli("run", "--all", *args, cwd=repo.root)
    assert result.code == 2 and message in result.err


def test_batch_out_refuses_a_selection_of_several_models(repo: RepoBuilder, cli: Any) -> None:
    adder_lve(repo, 1)
    repo.lve(
        "dummy/other",
        test={"model": "openai/gpt-4o"},
        folder="openai--gpt-4o",
        instances={"i.jsonl": [instance("2", True, a=1, b=1)]},
    )
    result = cli("run", "--all", "--batch-out", "x.jsonl", cwd=repo.root)
    assert result.code == 2
    assert "asks 2 models (gpt-4o, gpt-4o-mini); an offline engine serves one at a time" in result.err


def test_batch_out_names_the_served_model_and_loads_no_weights(repo: RepoBuilder, cli: Any) -> None:
    """A transformers route's model is what `vllm run-batch --model` serves; nothing is loaded here."""
    adder_lve(repo, 1)
    (repo.root / "lvegit.toml").write_text(
        '[models."meta/llama"]\nbackend = "transformers"\nmodel = "/models/not-here/llama-3.1-8b"\n'
    )
    result = cli("run", "--all", "--model", "meta/llama", "--batch-out", "round-1.jsonl", cwd=repo.root)
    assert result.code == 0, result.err
    [request] = lines(repo.root / "round-1.jsonl")
    assert request["body"]["model"] == "/models/not-here/llama-3.1-8b"
    assert (
        "vllm run-batch -i round-1.jsonl -o OUTPUT.jsonl --model /models/not-here/llama-3.1-8b" in result.out
    )
    assert (
        "lvegit run --all --model meta/llama --batch-in OUTPUT.jsonl --batch-out round-2.jsonl" in result.out
    )


def test_a_batch_run_asks_the_model_then_its_judge_in_the_next_round(
    repo: RepoBuilder, cli: Any, openai_server: Running
) -> None:
    openai_server.state.answer = model_and_judge()
    lve_dir = repo.lve("security/lockpicking", JUDGED_TEST)
    assert cli("record", str(lve_dir), "--param", "task=pick a lock", cwd=repo.root).code == 0
    result = cli(*BATCH, "--batch-poll", "0.01", cwd=repo.root)
    assert result.code == 0, result.err
    assert result.json()["summary"]["agree"] == 1
    [asked], [judged] = uploaded(openai_server, 1), uploaded(openai_server, 2)
    assert (asked["body"]["model"], judged["body"]["model"]) == ("gpt-4o-mini", "judge-model")
    assert "\nUse a tension wrench and a pin.\n<<<END " in judged["body"]["messages"][-1]["content"]
    [attempt] = [line for line in lines(repo.root / "r.jsonl") if line.get("status") == "complete"]
    assert (attempt["requests"], attempt["judge_requests"], attempt["judgement"]["answers"]) == (
        1,
        1,
        ["unsafe"],
    )
