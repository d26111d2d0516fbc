"""lvegit's benchmarks, compared side by side in one run: `python benchmarks/run.py` prints one table.

Every command runs as its own process (cold start included) on a synthetic repository; peak memory is the
process's maximum resident set size. Live runs go to an OpenAI-compatible server on 127.0.0.1 that answers
after 100 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

from generate import change_five, generate  # noqa: E402

from servers import OpenAIServer, serve  # noqa: E402

ROWS: list[tuple[str, str, str, str, str]] = []
# What the tiny toxicity classifier is trained on (label 1: toxic).
TOXIC_EXAMPLES = [
    ("you are stupid", 1),
    ("idiot", 1),
    ("hate you", 1),
    ("have a nice day", 0),
    ("thanks", 0),
    ("lovely day", 0),
]


def machine() -> str:
    return (
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, {platform.system()} {platform.release()}"
    )


def peak_rss(pid: int) -> float:
    """VmHWM of a running process in MiB (its own peak since exec; 0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def measure(
    args: list[str], cwd: Path, env: dict[str, str] | None = None, program: tuple[str, ...] = ("-m", "lvegit")
) -> tuple[float, float, str]:
    """(seconds, peak RSS in MiB, stdout) of one lvegit process (or of another Python `program`). Peak
    memory is sampled from /proc every 10 ms: rusage would count the memory of this (forking) process as
    the child's."""
    with tempfile.TemporaryFile(mode="w+") as output:
        started = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, *program, *args],
            cwd=cwd,
            env={**os.environ, **(env or {})},
            stdout=output,
            stderr=subprocess.DEVNULL,
        )
        peak = 0.0
        while process.poll() is None:
            peak = max(peak, peak_rss(process.pid))
            time.sleep(0.01)
        seconds = time.perf_counter() - started
        output.seek(0)
        return seconds, peak, output.read()


def row(name: str, scale: str, seconds: float, detail: str, memory: float) -> None:
    ROWS.append((name, scale, f"{seconds:.2f} s", detail, f"{memory:.0f} MiB"))
    print(
        f"  {name:<34} {scale:<22} {seconds:8.2f} s  {detail:<40} {memory:6.0f} MiB",
        file=sys.stderr,
        flush=True,
    )


def bench_help(workdir: Path) -> float:
    times, peak = [], 0.0
    for _ in range(7):
        seconds, memory, _ = measure(["--help"], workdir)
        times.append(seconds)
        peak = max(peak, memory)
    median = statistics.median(times)
    row("lvegit --help (cold start)", "median of 7", median, "target < 0.150 s", peak)
    return median


def bench_repository(workdir: Path, sizes: list[int], instances: int) -> tuple[dict[int, float], float]:
    """(changed-command seconds per size, validate + replay seconds at the largest size)."""
    changed: dict[int, float] = {}
    both = 0.0
    for size in sizes:
        root = generate(workdir / f"repo-{size}", size, instances)
        total = size * instances
        for command in ("validate", "replay"):
            seconds, memory, output = measure([command, "--all", "--format", "json"], root)
            summary = json.loads(output)["summary"]
            detail = f"{seconds / size * 1000:.2f} ms/LVE, {seconds / total * 1e6:.0f} us/instance"
            row(f"{command} --all", f"{size} LVEs, {total} inst.", seconds, detail, memory)
            both = seconds + (both if command == "replay" else 0.0)
            assert (summary.get("invalid", 0), summary.get("mismatch", 0), summary.get("error", 0)) == (
                0,
                0,
                0,
            )
        change_five(root, size)
        runs = [measure(["changed", "--base", "main", "--format", "json"], root) for _ in range(3)]
        seconds = statistics.median(r[0] for r in runs)
        assert len(json.loads(runs[0][2])["changed"]) == 5
        changed[size] = seconds
        row("changed (5 LVEs touched)", f"{size} LVEs", seconds, "median of 3", max(r[1] for r in runs))
    return changed, both


def answer(body: dict[str, Any]) -> str:
    a, b = body["messages"][-1]["content"].removeprefix("Compute ").removesuffix(".").split(" + ")
    return str(int(a) + int(b))


def every_tenth_is_rate_limited(number: int, body: dict[str, Any]) -> Any:
    return ("status", 429, {"Retry-After": "0"}) if number % 10 == 0 else None


# (concurrency, whether every tenth request is answered 429) of each live run
LIVE_RUNS = ((8, False), (32, False), (128, False), (32, True))


def bench_live(workdir: Path, latency: float) -> dict[str, float]:
    """Live runs of 1,000 instances against the latency server; then, as the yardstick at concurrency 32,
    a client that does nothing but post the same 1,000 requests (benchmarks/bare_client.py)."""
    root = generate(workdir / "live", 10, 100, commit=False, forms=("inline",))
    ratios = {}
    runs = [(concurrency, rate_limited, False) for concurrency, rate_limited in LIVE_RUNS]
    for concurrency, rate_limited, bare in [*runs, (32, False, True)]:
        state = OpenAIServer(answer=answer, latency=latency)
        if rate_limited:
            state.fault_for = every_tenth_is_rate_limited
        for running in serve(state):
            if bare:
                args, program = [running.url, "1000", str(concurrency)], (str(HERE / "bare_client.py"),)
                seconds, memory, output = measure(args, root, program=program)
            else:
                args = ["run", "--all", "--concurrency", str(concurrency), "--format", "json"]
                env = {"OPENAI_BASE_URL": running.url, "OPENAI_API_KEY": "bench"}
                seconds, memory, output = measure(args, root, env)
                summary = json.loads(output)["summary"]
                assert summary["attempts"] == 1000 and summary["error"] == 0, summary
        assert len(state.requests) >= 1000 and state.first_arrival and state.last_answer
        requests = state.last_answer - state.first_arrival
        ideal = 1000 * latency / concurrency
        label = f"run, concurrency {concurrency}" + (", 10% answered 429" if rate_limited else "")
        label = "yardstick: bare client, 32" if bare else label
        ratios[label] = seconds / ideal
        detail = (
            f"ideal {ideal:.2f} s; whole command {seconds / ideal:.2f}x, "
            f"first request to last answer {requests / ideal:.2f}x"
        )
        scale = "1000 requests" if bare else f"1000 inst., {len(state.requests)} req."
        row(f"  {label}" if bare else label, scale, seconds, detail, memory)
    return ratios


def bench_corpus(workdir: Path, latency: float, lves: int, concurrency: int = 256) -> dict[str, float]:
    """A team's scan of a whole corpus: LVEs x 10 instances against one model through the latency server,
    at a tenth of the size and at full size (memory should not grow with the run), beside the bare client
    posting as many requests. Reports when the first request arrived after the command started."""
    found: dict[str, float] = {}
    for size in (lves // 10, lves):
        root = generate(workdir / f"corpus-{size}", size, 10, commit=False, forms=("inline",))
        requests = size * 10
        for bare in (False, True):
            state = OpenAIServer(answer=answer, latency=latency)
            for running in serve(state):
                started = time.perf_counter()
                if bare:
                    args = [running.url, str(requests), str(concurrency)]
                    seconds, memory, _output = measure(args, root, program=(str(HERE / "bare_client.py"),))
                else:
                    args = ["run", "--all", "--concurrency", str(concurrency), "--format", "json"]
                    env = {"OPENAI_BASE_URL": running.url, "OPENAI_API_KEY": "bench"}
                    seconds, memory, output = measure(args, root, env)
                    summary = json.loads(output)["summary"]
                    assert summary["attempts"] == requests and summary["error"] == 0, summary
            assert state.first_arrival is not None
            first = state.first_arrival - started
            label = f"{'bare client' if bare else 'corpus scan'}, {size:,} LVEs"
            found[f"{label} seconds"], found[f"{label} memory"], found[f"{label} first"] = (
                seconds,
                memory,
                first,
            )
            ideal = requests * latency / concurrency
            detail = f"ideal {ideal:.1f} s ({seconds / ideal:.2f}x); first request after {first:.2f} s"
            row(f"  {label}" if bare else label, f"{requests:,} requests, concurrency {concurrency}", seconds,
                detail, memory)  # fmt: skip
    return found


def bench_classifier(workdir: Path) -> None:
    from lvegit.checkers import model_based

    from builders import instance, train_tiny_classifier

    model = str(train_tiny_classifier(workdir / "classifier", ("neutral", "toxic"), TOXIC_EXAMPLES))
    words = ["you", "are", "stupid", "have", "a", "nice", "day", "thanks", "hate", "lovely"]
    texts = [f"{words[i % 10]} {words[(i // 10) % 10]} {words[(i // 100) % 10]}" for i in range(200)]
    checker = model_based.ToxicityChecker(0.5, model)
    rows = [instance(text, checker.is_safe(None, text), a=1, b=2) for text in texts]
    root = workdir / "classifier-repo"
    folder = root / "repository/tox/bench/openai--gpt-4o-mini"
    (folder / "instances").mkdir(parents=True)
    (root / ".lverepo").write_text("bench\n")
    test = {
        "description": "bench",
        "model": "openai/gpt-4o-mini",
        "prompt": [{"content": "{a}{b}"}],
        "prompt_parameters": ["a", "b"],
        "checker_args": {"checker_name": "ToxicityChecker", "toxicity_threshold": 0.5, "model": model},
    }
    (folder / "test.json").write_text(json.dumps(test))
    (folder / "instances/i.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    seconds, memory, output = measure(["replay", "--all", "--format", "json"], root)
    assert json.loads(output)["summary"]["reproduced"] == 200
    row("replay, ToxicityChecker (process)", "200 inst.", seconds, "incl. start-up and torch import", memory)

    def timed(label: str, loads: int, judge: Any) -> None:
        model_based._PIPELINES.clear()
        started = time.perf_counter()
        judge()
        row(
            f"  {label}",
            f"200 inst., {loads} load{'s' if loads > 1 else ''}",
            time.perf_counter() - started,
            "(in process)",
            0,
        )

    def per_instance_loads() -> None:
        for text in texts:
            model_based._PIPELINES.clear()
            model_based.ToxicityChecker(0.5, model).is_safe(None, text)

    def one_load_unbatched() -> None:
        one = model_based.ToxicityChecker(0.5, model)
        for text in texts:
            one.pipeline([text])

    def one_load_batched() -> None:
        one = model_based.ToxicityChecker(0.5, model)
        one.prepare(texts)
        for text in texts:
            one.is_safe(None, text)

    timed("load per instance", 200, per_instance_loads)
    timed("one load, one text per call", 1, one_load_unbatched)
    timed("one load, batched (what replay does)", 1, one_load_batched)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="100,1000,10000", help="repository sizes in LVEs")
    parser.add_argument("--instances", type=int, default=10, help="instances per LVE")
    parser.add_argument(
        "--latency", type=float, default=0.1, help="seconds the model server takes per request"
    )
    parser.add_argument("--skip", default="", help="comma-separated: help,repository,live,corpus,classifier")
    parser.add_argument(
        "--corpus-lves", type=int, default=10_000, help="LVEs of the corpus scan (x10 instances)"
    )
    options = parser.parse_args()
    skip = set(filter(None, options.skip.split(",")))
    sizes = [int(s) for s in options.sizes.split(",")]
    print(machine(), file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="lvegit-bench-") as temporary:
        workdir = Path(temporary)
        results: dict[str, Any] = {}
        if "help" not in skip:
            results["help"] = bench_help(workdir)
        if "repository" not in skip:
            results["changed"], results["validate_replay"] = bench_repository(
                workdir, sizes, options.instances
            )
        if "live" not in skip:
            results["live"] = bench_live(workdir, options.latency)
        if "corpus" not in skip:
            results["corpus"] = bench_corpus(workdir, options.latency, options.corpus_lves)
        if "classifier" not in skip:
            bench_classifier(workdir)
    print("| benchmark | scale | time | per unit / comparison | peak memory |")
    print("|---|---|---|---|---|")
    for name, scale, seconds, detail, memory in ROWS:
        print(f"| {name} | {scale} | {seconds} | {detail} | {memory if memory != '0 MiB' else '—'} |")
    checks = []
    if "help" in results:
        checks.append(("lvegit --help under 150 ms", results["help"] < 0.150))
    if "changed" in results and len(results["changed"]) > 1:
        small, large = (
            results["changed"][min(results["changed"])],
            results["changed"][max(results["changed"])],
        )
        checks.append(
            (
                f"changed at {max(results['changed'])} LVEs within 1.5x of {min(results['changed'])}",
                large <= 1.5 * small,
            )
        )
    if "validate_replay" in results:
        checks.append(
            (
                f"validate --all + replay --all at {max(sizes)} LVEs under 30 s "
                f"({results['validate_replay']:.1f} s)",
                results["validate_replay"] < 30,
            )
        )
    if "live" in results:
        checks.append(
            (
                "live run at concurrency 32, the whole command within 1.2x of ideal (requests x latency / "
                f"concurrency): {results['live']['run, concurrency 32']:.2f}x (a client that only posts the "
                f"same requests: {results['live']['yardstick: bare client, 32']:.2f}x)",
                results["live"]["run, concurrency 32"] <= 1.2,
            )
        )
    if "corpus" in results:
        corpus, full, tenth = results["corpus"], options.corpus_lves, options.corpus_lves // 10
        scan, bare = (
            corpus[f"corpus scan, {full:,} LVEs seconds"],
            corpus[f"bare client, {full:,} LVEs seconds"],
        )
        first = corpus[f"corpus scan, {full:,} LVEs first"]
        peaks = (corpus[f"corpus scan, {full:,} LVEs memory"], corpus[f"corpus scan, {tenth:,} LVEs memory"])
        checks += [
            (f"corpus scan of {full:,} LVEs within 1.15x of the bare client ({scan / bare:.2f}x)",
             scan <= 1.15 * bare),
            (f"its first request within 0.5 s of the start ({first:.2f} s)", first <= 0.5),
            (f"its memory flat: 10x the run, at most 1.2x the peak ({peaks[0]:.0f} vs {peaks[1]:.0f} MiB)",
             peaks[0] <= 1.2 * peaks[1]),
        ]  # fmt: skip
    print()
    for text, ok in checks:
        print(f"- {'met' if ok else 'MISSED'}: {text}")


if __name__ == "__main__":
    main()
