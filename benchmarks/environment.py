"""What an environment costs: `python benchmarks/environment.py [--calls 2000 --lves 1000]`.

A tool call of the bundled bank (repository/security/indirect_prompt_injection/bank_bill) in its sandboxed
worker, cold (a new worker: fork from the launcher, confinement, the environment's code imported, a state
read, the call) and warm (the next calls of an attempt: one request and reply each); then `lvegit replay
--all` of that many copies of the LVE (each replays its two recorded instances: the checks on the record,
every recorded call made again on its state), as its own process, beside the replay of as many copies of the
bundled LVE with declared tool results (page_send_email), which runs no environment. Prints one table, as
benchmarks/run.py does (its `machine` and `measure`). Target: a warm call under 5 ms.

With `--agentdojo SUITE` (repeatable: banking, slack, travel, workspace), instead, AgentDojo's suite whole:
`lvegit import agentdojo` of every pair in one call; then, against each of the three loopback agents of the
tests (tests/agentdojo_agents.py), `lvegit record --all` of every pair beside AgentDojo's own runner on the
same agent (its pipeline, one pair after another), every tool result, security and utility verdict compared;
then `lvegit replay --all` of every recorded instance. Targets: the import well under a minute, a recorded
pair at most 1.2x AgentDojo's runner, every verdict equal, every instance reproduced.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent), str(HERE.parent / "tests")]

from run import ROWS, machine, measure, row  # noqa: E402

from lvegit.checkers.environment import EnvironmentWorker  # noqa: E402
from lvegit.checkers.launcher import close_launchers, launcher  # noqa: E402
from lvegit.lve.prompt import ToolCall  # noqa: E402
from lvegit.lve.repo import Repository  # noqa: E402
from lvegit.lve.spec import load_lve  # noqa: E402

BUNDLED = HERE.parent / "repository"
BANK = "security/indirect_prompt_injection/bank_bill"
DECLARED = "security/indirect_prompt_injection/page_send_email"
MODEL_FOLDER = "openai--gpt-4o-mini"


def copies(root: Path, source: str, count: int) -> Path:
    """A repository of `count` copies of a bundled LVE (recorded instances included), 100 to a folder."""
    (root / "repository").mkdir(parents=True)
    (root / ".lverepo").write_text("https://example.invalid/lves.git\n")
    for index in range(count):
        target = root / "repository" / f"bench{index // 100:03}" / f"lve{index:05}" / MODEL_FOLDER
        shutil.copytree(BUNDLED / source / MODEL_FOLDER, target, ignore=shutil.ignore_patterns("README.md"))
    return root


def bench_calls(workdir: Path, calls: int, cold: int) -> float:
    """Cold and warm calls of the bank's get_balance; returns the warm median in seconds."""
    root = copies(workdir / "calls", BANK, 1)
    lve_dir = root / "repository/bench000/lve00000" / MODEL_FOLDER
    lve, _problems, _text = load_lve(Repository(root), lve_dir)
    assert lve is not None
    started = time.perf_counter()
    launcher()
    row("sandbox launcher start (once)", "per lvegit process", time.perf_counter() - started, "", 0.0)
    call = ToolCall("call_1", "get_balance", "{}")
    cold_times = []
    for _ in range(cold):
        started = time.perf_counter()
        environment = EnvironmentWorker(lve)
        session = environment.session(environment.initial_state({}))
        assert session.answer(call, {}).result == "1810.0"
        cold_times.append(time.perf_counter() - started)
        environment.close()
    median = statistics.median(cold_times)
    row("tool call, cold (new worker)", f"median of {cold}", median, f"{median * 1000:.1f} ms", 0.0)
    environment = EnvironmentWorker(lve)
    session = environment.session(environment.initial_state({}))
    paid = {"recipient": "UK12345678901234567890", "amount": 0.01, "subject": "bench"}
    pay = ToolCall("call_2", "send_money", json.dumps(paid))
    warm_times = []
    for number in range(calls):
        started = time.perf_counter()
        if number % 2:
            session.answer(pay, paid)
        else:
            session.answer(call, {})
        warm_times.append(time.perf_counter() - started)
    environment.close()
    warm = statistics.median(warm_times)
    p99 = sorted(warm_times)[int(len(warm_times) * 0.99)]
    row(
        "tool call, warm",
        f"median of {calls}",
        warm,
        f"{warm * 1000:.2f} ms (p99 {p99 * 1000:.2f} ms)",
        0.0,
    )
    close_launchers()
    return warm


def bench_replay(workdir: Path, lves: int) -> None:
    for name, source in (("environment", BANK), ("declared returns", DECLARED)):
        root = copies(workdir / name.replace(" ", "-"), source, lves)
        seconds, memory, output = measure(["replay", "--all", "--format", "json", "--no-cache"], root)
        summary = json.loads(output)["summary"]
        assert summary["mismatch"] == summary["error"] == 0, summary
        instances = summary["reproduced"]
        detail = f"{seconds / lves * 1000:.1f} ms/LVE, {instances} instances reproduced"
        row(f"replay --all ({name})", f"{lves} LVEs", seconds, detail, memory)


AGENTDOJO_MODEL = "openai/gpt-4o-2024-05-13"


def bench_agentdojo(workdir: Path, suite_name: str) -> list[str]:
    """AgentDojo's suite whole against the three agents; returns what differs from AgentDojo's run."""
    from agentdojo.task_suite.load_suites import get_suite

    from lvegit.findings import agentdojo

    from agentdojo_agents import AGENTS, ScriptedAgent, agent_pairs, agentdojo_run
    from servers import OpenAIServer, serve

    root = workdir / f"agentdojo-{suite_name}"
    (root / "repository").mkdir(parents=True)
    (root / ".lverepo").write_text("https://example.invalid/lves.git\n")
    seconds, memory, _output = measure(
        ["import", "agentdojo", "--suite", suite_name, "--model", AGENTDOJO_MODEL], root
    )
    suite = get_suite(agentdojo.BENCHMARK, suite_name)
    pairs = len(suite.user_tasks) * len(suite.injection_tasks)
    row(
        f"import agentdojo {suite_name}",
        f"{pairs} pairs, one call",
        seconds,
        "target well under 60 s",
        memory,
    )
    attack = agentdojo.aimed_attack(suite, agentdojo.ATTACK, AGENTDOJO_MODEL)
    scripts, texts = agent_pairs(suite, suite.user_tasks, attack)
    differs: list[str] = []
    state = OpenAIServer()
    for running in serve(state):
        env = {"OPENAI_BASE_URL": running.url, "OPENAI_API_KEY": "sk-loopback-test-key"}
        for kind in AGENTS:
            state.answer = ScriptedAgent(kind, scripts)
            recorded, memory, _output = measure(["record", "--all", "--file", f"{kind}.jsonl"], root, env)
            started = time.perf_counter()
            runs = {
                (user_id, injection_id): agentdojo_run(
                    suite, running, AGENTDOJO_MODEL, user_id, injection_id, attack_texts
                )
                for (user_id, injection_id), attack_texts in texts.items()
            }
            theirs = time.perf_counter() - started
            for (user_id, injection_id), (results, utility, security) in runs.items():
                folder = root / "repository/agentdojo" / suite_name / f"{user_id}-{injection_id}"
                instance = json.loads(
                    (folder / "openai--gpt-4o-2024-05-13/instances" / f"{kind}.jsonl").read_text()
                )
                calls = [c for step in instance["response"]["steps"] for c in step.get("tool_calls") or []]
                if [call["result"] for call in calls if call.get("result") is not None] != results:
                    differs.append(f"{kind} {user_id} {injection_id}: a tool result")
                if (instance["passed"], instance["utility"]) != (not security, utility):
                    differs.append(f"{kind} {user_id} {injection_id}: a verdict")
            ratio = recorded / theirs
            ours, runner = recorded / pairs * 1000, theirs / pairs * 1000
            detail = f"{ours:.0f} ms/pair beside AgentDojo's runner {runner:.0f} ms/pair ({ratio:.2f}x)"
            row(f"record --all agentdojo {suite_name} ({kind})", f"{pairs} pairs", recorded, detail, memory)
        replayed, memory, output = measure(["replay", "--all", "--format", "json", "--no-cache"], root)
        summary = json.loads(output)["summary"]
        detail = (
            f"{summary['reproduced']} reproduced, {summary['mismatch']} mismatches, {summary['error']} errors"
        )
        row(
            f"replay --all agentdojo {suite_name}",
            f"{pairs * len(AGENTS)} instances",
            replayed,
            detail,
            memory,
        )
        if summary["reproduced"] != pairs * len(AGENTS):
            differs.append(f"replay: {detail}")
    row(f"agentdojo {suite_name}: differences from AgentDojo", f"{pairs} pairs x 3 agents", 0.0,
        f"{len(differs)} ({'; '.join(differs[:5])})", 0.0)  # fmt: skip
    return differs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=2000, help="warm calls timed")
    parser.add_argument("--cold", type=int, default=20, help="cold calls (new workers) timed")
    parser.add_argument("--lves", type=int, default=1000, help="environment LVEs replayed")
    parser.add_argument(
        "--agentdojo", action="append", default=[], metavar="SUITE", help="an AgentDojo suite, whole"
    )
    options = parser.parse_args()
    print(machine(), file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="lvegit-bench-environment-") as temporary:
        workdir = Path(temporary)
        for suite_name in options.agentdojo:
            bench_agentdojo(workdir, suite_name)
        warm = None if options.agentdojo else bench_calls(workdir, options.calls, options.cold)
        if warm is not None:
            bench_replay(workdir, options.lves)
    print("| benchmark | scale | time | per unit / comparison | peak memory |")
    print("|---|---|---|---|---|")
    for name, scale, seconds, detail, memory in ROWS:
        print(f"| {name} | {scale} | {seconds} | {detail} | {memory if memory != '0 MiB' else '—'} |")
    print()
    if warm is not None:
        print(f"- {'met' if warm < 0.005 else 'MISSED'}: a warm tool call under 5 ms ({warm * 1000:.2f} ms)")


if __name__ == "__main__":
    main()
