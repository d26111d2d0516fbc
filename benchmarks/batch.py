"""Batch runs at scale: `python benchmarks/batch.py [--sizes 1000 10000 50000]`.

For each size, a synthetic repository (every prompt form of benchmarks/generate.py, 100 instances per
LVE) is carried over through batch files, each command its own cold process:
- plan and write: `lvegit run --all --batch-out round-1.jsonl` plans every attempt and writes round 1;
- read and judge: `--batch-in round-1-output.jsonl --batch-out round-2.jsonl --report r.jsonl` reads the
  engine's output, judges and records every attempt it completes, and writes round 2 (the second hole of
  the multi-variable prompts);
- round 2: `--batch-in` both outputs; every attempt has ended.
The engine between rounds is tests/servers.py's run_batch_file (what `vllm run-batch` writes), not timed.
A last row runs `--batch` end to end against the loopback Batch API (polls not waited: --batch-poll 0).
Targets: plan and write, and read and judge, each under 5 s at 10,000 attempts; peak memory flat in the
number of attempts. lve-tools has no batch mode, so there is no peer row.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

from generate import generate  # noqa: E402
from run import ROWS, machine, measure, row  # noqa: E402

from servers import OpenAIServer, run_batch_file, serve  # noqa: E402


def summary(output: str) -> dict[str, int]:
    data = json.loads(output)
    assert not data["batch"]["problems"], data["batch"]["problems"]
    counts: dict[str, int] = data["summary"]
    return counts


def bench(workdir: Path, size: int) -> dict[str, float]:
    root = generate(workdir / f"repo-{size}", size // 100, 100, commit=False)
    scale = f"{size} attempts"
    seconds: dict[str, float] = {}

    time, memory, output = measure(["run", "--all", "--batch-out", "round-1.jsonl", "--format", "json"], root)
    requests = sum(1 for _ in (root / "round-1.jsonl").open())
    assert summary(output)["waiting"] == size
    row("batch: plan and write round 1", scale, time, f"{requests} requests written", memory)
    seconds["write"] = time

    first = run_batch_file(root / "round-1.jsonl")
    args = ["run", "--all", "--batch-in", first.name, "--batch-out", "round-2.jsonl", "--report", "r.jsonl"]
    time, memory, output = measure([*args, "--format", "json"], root)
    counts = summary(output)
    judged = counts["attempts"]
    assert judged + counts["waiting"] == size, counts
    row("batch: read and judge round 1", scale, time, f"{judged} judged, {counts['waiting']} wait", memory)
    seconds["judge"] = time

    second = run_batch_file(root / "round-2.jsonl")
    args = [
        "run",
        "--all",
        "--batch-in",
        first.name,
        "--batch-in",
        second.name,
        "--batch-out",
        "round-3.jsonl",
    ]
    time, memory, output = measure([*args, "--format", "json"], root)
    counts = summary(output)
    assert counts["attempts"] == size and counts["waiting"] == 0, counts
    row("batch: round 2 (all outputs again)", scale, time, f"{size} judged", memory)

    for running in serve(OpenAIServer()):
        env = {"OPENAI_BASE_URL": running.url, "OPENAI_API_KEY": "bench"}
        args = ["run", "--all", "--batch", "--batch-poll", "0", "--report", "api.jsonl", "--format", "json"]
        time, memory, output = measure(args, root, env)
        counts = summary(output)
        assert counts["attempts"] == size, counts
        batches = len(running.state.created())
        row("batch: --batch, loopback Batch API", scale, time, f"{batches} batches, server included", memory)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 50_000])
    options = parser.parse_args()
    print(machine(), file=sys.stderr)
    with tempfile.TemporaryDirectory() as folder:
        results = {size: bench(Path(folder), size) for size in options.sizes}
    print("| benchmark | scale | time | detail | peak memory |")
    print("|---|---|---|---|---|")
    for name, scale, time, detail, memory in ROWS:
        print(f"| {name} | {scale} | {time} | {detail} | {memory} |")
    if 10_000 in results:
        print()
        for step, label in (("write", "plan and write"), ("judge", "read and judge")):
            ok = results[10_000][step] < 5
            print(f"- {'met' if ok else 'MISSED'}: {label} 10,000 attempts in under 5 s")


if __name__ == "__main__":
    main()
