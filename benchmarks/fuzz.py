"""The long run of the hostile-input fuzz (tests/test_fuzz.py): `python benchmarks/fuzz.py [EXAMPLES [SEED]]`.

The suite runs seeds 0 to 11 every time; this runs EXAMPLES (default 500) from a fresh first seed, which it
prints, and reports the time. A failing example is named by its seed in pytest's test id: run it again with
LVEGIT_FUZZ_SEED=N LVEGIT_FUZZ_EXAMPLES=1 python -m pytest tests/test_fuzz.py."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    examples = sys.argv[1] if len(sys.argv) > 1 else "500"
    first = sys.argv[2] if len(sys.argv) > 2 else str(random.randrange(10**9))
    env = {**os.environ, "LVEGIT_FUZZ_EXAMPLES": examples, "LVEGIT_FUZZ_SEED": first}
    print(f"seeds {first} to {int(first) + int(examples) - 1}", flush=True)
    started = time.perf_counter()
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_fuzz.py"]
    done = subprocess.run(command, cwd=ROOT, env=env, check=False)
    print(f"{examples} fuzz examples in {time.perf_counter() - started:.1f} s: exit {done.returncode}")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
