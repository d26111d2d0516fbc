"""`lvegit site` on a large synthetic repository:
`python benchmarks/site_build.py [--lves 10000 --instances 10]`.

Builds the site of a generated repository (every prompt form of benchmarks/generate.py) as its own process,
cold, and prints one table row: LVEs, instances, pages, seconds (median of the runs, min-max), output size
and peak memory. The target: 10,000 LVEs with 100,000 instances in under 30 s on the 2-core machine.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE)]

from generate import generate  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lves", type=int, default=10_000)
    parser.add_argument("--instances", type=int, default=10, help="instances per LVE")
    parser.add_argument("--runs", type=int, default=3)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = generate(Path(scratch) / "lves", options.lves, options.instances, commit=False)
        out = Path(scratch) / "site"
        seconds = []
        for _ in range(options.runs):
            started = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "lvegit", "site", str(out), "--repo", str(root)],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            seconds.append(time.perf_counter() - started)
        pages = sum(1 for _ in out.rglob("*.html"))
        size = sum(path.stat().st_size for path in out.rglob("*") if path.is_file())
        memory = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print("| LVEs | instances | pages | seconds (median, min-max) | output | peak memory |")
    print("|---:|---:|---:|---:|---:|---:|")
    print(
        f"| {options.lves:,} | {options.lves * options.instances:,} | {pages:,} | "
        f"{statistics.median(seconds):.1f} ({min(seconds):.1f}-{max(seconds):.1f}) | "
        f"{size / 2**20:.0f} MiB | {memory:.0f} MiB |"
    )


if __name__ == "__main__":
    main()
