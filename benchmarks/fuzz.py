"""The long run of the hostile-input fuzz (tests/test_fuzz.py): `python benchmarks/fuzz.py [EXAMPLES]`.

The suite runs the same 12 examples every time; this draws EXAMPLES new ones (default 500) from a fresh
seed, and on a failure hypothesis prints the example and how to reproduce it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    examples = sys.argv[1] if len(sys.argv) > 1 else "500"
    env = {**os.environ, "LVEGIT_FUZZ_EXAMPLES": examples, "LVEGIT_FUZZ_FRESH": "1"}
    started = time.perf_counter()
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_fuzz.py"]
    done = subprocess.run(command, cwd=ROOT, env=env, check=False)
    print(f"{examples} fuzz examples in {time.perf_counter() - started:.1f} s: exit {done.returncode}")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
