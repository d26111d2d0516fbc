"""The run history at scale: `python benchmarks/history.py [--lves 10000 --models 20 --runs 50]`.

Synthesizes a history of LVEs x models x runs (one attempt each: 10 million rows at the defaults) for a
generated repository of as many LVEs, as the Parquet files `lvegit history add` writes, then times, each
as its own process, cold: `lvegit status --all` (text and JSON) and `lvegit site` with the history. Prints
one table with the history's size on disk. Targets on the 2-core machine: status under 10 s, site under
60 s. Every LVE's rate changes over time: some are fixed, some regress, some always reproduce.
"""

from __future__ import annotations

import argparse
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from generate import generate, lve_path  # noqa: E402

from lvegit.history.store import arrow_schema, write_table  # noqa: E402

FIRST_RUN = datetime(2025, 1, 6, 3, 17, tzinfo=UTC)


def synthesize(folder: Path, lves: int, models: int, runs: int, seed: int = 7) -> int:
    """Write the history files; returns their total size in bytes."""
    import pyarrow as pa

    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    paths = sorted(lve_path(index) for index in range(lves))  # rows sorted by LVE, as history add writes them
    names = [f"vendor/model-{m:02}" for m in range(models)]
    # each LVE and model: the unsafe rate before and after the run where it changes
    change = [[(rng.random(), rng.random(), rng.randrange(runs)) for _ in names] for _ in paths]
    size = 0
    for run in range(runs):
        when = FIRST_RUN + timedelta(weeks=run)
        key = f"{run:016x}"
        run_id = f"{when:%Y-%m-%dT%H%M%SZ}-{key}"
        lve_column, model_column, version_column, unsafe_column = [], [], [], []
        for index, path in enumerate(paths):
            for m, model in enumerate(names):
                before, after, at = change[index][m]
                rate = before if run < at else after if after > 0.5 else 0.0  # half of them fixed
                lve_column.append(path)
                model_column.append(model)
                version_column.append(f"{model}-v{1 + run // 10}")
                unsafe_column.append(rng.random() < rate)
        rows = len(lve_column)
        table = pa.table(
            {
                "run": pa.array([run_id] * rows, pa.string()),
                "run_at": pa.array([when] * rows, pa.timestamp("ms", tz="UTC")),
                "lve": lve_column,
                "model": model_column,
                "version": version_column,
                "file": pa.array(["instances.jsonl"] * rows, pa.string()),
                "line": pa.array([1] * rows, pa.int32()),
                "repetition": pa.array([0] * rows, pa.int32()),
                "unsafe": unsafe_column,
            },
            schema=arrow_schema(invalid=False),  # no invalid verdict: the first layout
        )
        parquet = folder / f"{run_id}.parquet"
        write_table(table, parquet)
        size += parquet.stat().st_size
    return size


def timed(command: list[str], runs: int) -> tuple[list[float], float]:
    seconds = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        seconds.append(time.perf_counter() - started)
    return seconds, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lves", type=int, default=10_000)
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of each command")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = generate(Path(scratch) / "lves", options.lves, 1, commit=False)
        started = time.perf_counter()
        size = synthesize(root / "history", options.lves, options.models, options.runs)
        made = time.perf_counter() - started
        rows = options.lves * options.models * options.runs
        lvegit = [sys.executable, "-m", "lvegit"]
        scale = f"{options.lves:,} LVEs x {options.models} models x {options.runs} runs ({rows:,} rows)"
        print(f"history: {size / 2**20:.1f} MiB in {options.runs} files, {size / rows:.2f} bytes/row "
              f"(synthesized in {made:.1f} s)")  # fmt: skip
        print("| benchmark | scale | time | per unit / comparison | peak memory |")
        print("|---|---|---|---|---|", flush=True)
        for form in ("text", "json"):
            command = [*lvegit, "status", "--all", "--format", form, "--repo", str(root)]
            status, memory = timed(command, options.repeat)
            print(
                f"| status --all --format {form} | {scale} | {statistics.median(status):.2f} s | "
                f"median of {len(status)} ({min(status):.2f}-{max(status):.2f} s); target < 10 s | "
                f"{memory:.0f} MiB |",
                flush=True,
            )
        out = Path(scratch) / "site"
        site, memory = timed([*lvegit, "site", str(out), "--repo", str(root)], 1)
        html = sum(path.stat().st_size for path in out.rglob("*.html"))
        print(
            f"| site with the history | {scale} | {site[0]:.1f} s | {html / 2**20:,.0f} MiB of pages; "
            f"target < 60 s | {memory:.0f} MiB |"
        )


if __name__ == "__main__":
    main()
