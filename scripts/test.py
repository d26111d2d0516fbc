"""The README's test command: install what the tests need into this Python, then run lint, types and the
test suite (what CI runs, from a fresh clone: `.ci/run`).

    python scripts/test.py            # from the root of a clone, in the Python (a venv) to test in

What it installs, in order of need:
- Debian's `chromium` and `chromium-driver` with apt-get, for the site's tests in a real browser (as root;
  where apt-get cannot, it says so and the browser tests skip, saying why);
- Microsoft's `sarif-multitool` from the npm registry into `.tools/` (it checks the SARIF lvegit writes
  against GitHub's rules; without npm, that check skips);
- torch's CPU build through pip from PyTorch's CPU index (or, where pip's `find-links` holds that wheel, from
  there), so that the rest does not resolve the CUDA build; `--no-compile` leaves bytecode to the first
  import of each module (the tests import a small part of what is installed);
- uv, which installs the rest (`-e .[test]`) into the same Python in a tenth of pip's time.
apt-get and npm run beside pip and uv (each waits on its registry, not on the others). Then `ruff check`
and `ruff format --check` (a failure stops the command there), then `pytest` with `mypy` beside it (the
command fails where either does). The tests run with PYTHONDONTWRITEBYTECODE unset: where it is set, as on
CI machines, no first import writes bytecode, and each of the suite's processes compiles from source what it
imports.

Arguments after the command go to pytest (`python scripts/test.py -x tests/judge`); once set up, one test
runs alone with `python -m pytest tests/judge/test_check.py::test_name`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
TORCH = "torch==2.13.0"
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"

# Optional parts installed beside the Python packages: what each runs, and what its absence costs.
BROWSER = (
    ["sh", "-c", "apt-get update -qq && apt-get install -y -qq chromium chromium-driver"],
    "lvegit: no chromium; the browser tests will skip",
)
SARIF_MULTITOOL = (
    "npm install --no-save --no-audit --no-fund --prefix .tools @microsoft/sarif-multitool".split(),
    "lvegit: no sarif-multitool; its SARIF check will skip",
)
PYTHON_PACKAGES = (
    [PYTHON, "-m", "pip", "install", "--no-compile", "--no-deps", "--index-url", TORCH_CPU_INDEX, TORCH],
    [PYTHON, "-m", "pip", "install", "-q", "uv"],
    [PYTHON, "-m", "uv", "pip", "install", "--python", PYTHON, "-e", ".[test]"],
)
LINT = ([PYTHON, "-m", "ruff", "check", "."], [PYTHON, "-m", "ruff", "format", "--check", "."])
TYPES = [PYTHON, "-m", "mypy"]


def optional(command: list[str], missing: str) -> bool:
    """Run an optional install quietly; where it fails, say what skips and why (its last lines)."""
    try:
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    except OSError as error:  # the program itself is missing (no npm, no sh)
        print(f"{missing} ({error})", flush=True)
        return False
    if done.returncode != 0:
        said = (done.stdout + done.stderr).strip().splitlines()[-3:]
        print(missing + "".join(f"\n  {line}" for line in said), flush=True)
    return done.returncode == 0


def step(command: list[str], env: dict[str, str] | None = None) -> None:
    """Run one step (`python -m ...`) in the foreground; a failure ends the command with its exit status."""
    started = time.monotonic()
    code = subprocess.run(command, cwd=ROOT, env=env, check=False).returncode
    print(f"lvegit: {' '.join(command[2:])} took {time.monotonic() - started:.0f} s", flush=True)
    if code != 0:
        sys.exit(code)


def beside_the_tests(command: list[str]) -> subprocess.Popen[str]:
    """Start a check that runs while the tests do, its output kept for the end."""
    return subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def main(pytest_arguments: list[str]) -> None:
    with ThreadPoolExecutor(max_workers=2) as pool:
        beside: list[Future[bool]] = [pool.submit(optional, *part) for part in (BROWSER, SARIF_MULTITOOL)]
        for command in PYTHON_PACKAGES:
            step(command)
        for future in beside:
            future.result()
    for command in LINT:
        step(command)
    # mypy (a cold run: about 20 s of one core) beside the suite, which leaves a core idle while its last
    # modules finish; what it says comes after the tests' report.
    types = beside_the_tests(TYPES)
    environment = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    try:
        step([PYTHON, "-m", "pytest", *pytest_arguments], environment)
    finally:
        said, _ = types.communicate()
        print(said, end="", flush=True)
    if types.returncode != 0:
        sys.exit(types.returncode)


if __name__ == "__main__":
    main(sys.argv[1:])
