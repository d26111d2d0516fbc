"""What withheld LVEs cost a check: `python benchmarks/disclosure.py [--lves 1000 --withheld 100]`.

`lvegit check --all --no-cache` (its own process, cold start included) of a synthetic repository of that many
LVEs (benchmarks/generate.py) in clear, then of the same repository with every tenth LVE withheld
(lvegit.disclosure: encrypted to one recipient, committed), without the disclosure identity (their envelopes
validated, their replays skipped) and with it (each decrypted into a scratch folder and checked there).
Prints one table, as benchmarks/run.py does. Target: at most 1.2x the check in clear, both ways.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent), str(HERE.parent / "tests")]

from generate import _commit, generate, lve_path  # noqa: E402
from run import ROWS, machine, measure, row  # noqa: E402

from lvegit.disclosure.withheld import withhold  # noqa: E402
from lvegit.lve.repo import Repository  # noqa: E402

INSTANCES = 5
ABSTRACT = {"description": "withheld for the benchmark", "embargo_until": "2030-01-01"}


def repositories(workdir: Path, lves: int, withheld: int) -> tuple[Path, Path, str]:
    """(the repository in clear, the same with `withheld` LVEs withheld, the identity that opens them)."""
    import pyrage

    identity = pyrage.x25519.Identity.generate()
    clear = generate(workdir / "clear", lves, INSTANCES)
    root = generate(workdir / "withheld", lves, INSTANCES, commit=False)
    (root / "disclosure.toml").write_text(f'[[recipients]]\nkey = "{identity.to_public()}"\n')
    step = lves // withheld
    for index in range(0, step * withheld, step):
        withhold(Repository(root), root / lve_path(index), ABSTRACT)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    _commit(root, "synthetic, some withheld")
    return clear, root, str(identity)


def check(root: Path, env: dict[str, str]) -> tuple[float, float]:
    """(seconds, peak MiB) of one check; its replays must all hold."""
    command = ["check", "--all", "--no-cache", "--format", "json"]
    seconds, memory, output = measure(command, root, env)
    if not output:  # it failed: say why
        again = subprocess.run(
            [sys.executable, "-m", "lvegit", *command],
            cwd=root,
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            check=False,
        )
        raise SystemExit(f"lvegit check failed in {root}:\n{again.stderr[-3000:]}")
    summary = json.loads(output)["summary"]
    assert summary["mismatch"] == summary["error"] == 0, summary
    return seconds, memory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lves", type=int, default=1000, help="LVEs in the repository")
    parser.add_argument("--withheld", type=int, default=100, help="of which withheld")
    parser.add_argument("--runs", type=int, default=3, help="rounds timed (the median is shown)")
    options = parser.parse_args()
    print(machine(), file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="lvegit-bench-disclosure-") as temporary:
        clear, withheld, identity = repositories(Path(temporary), options.lves, options.withheld)
        cases = {
            "in clear": (clear, {}),
            "without identity": (withheld, {}),
            "with identity": (withheld, {"LVEGIT_DISCLOSURE_IDENTITY": identity}),
        }
        # Round by round, so that the load of a shared machine weighs on the three alike.
        rounds = [
            {name: check(root, env) for name, (root, env) in cases.items()} for _ in range(options.runs)
        ]
    medians = {name: statistics.median(r[name][0] for r in rounds) for name in cases}
    base = medians["in clear"]
    for name in cases:
        memory = max(r[name][1] for r in rounds)
        scale = f"{options.lves} LVEs" + (f", {options.withheld} withheld" if name != "in clear" else "")
        detail = "median" if name == "in clear" else f"{medians[name] / base:.2f}x clear"
        row(f"check --all ({name})", scale, medians[name], detail, memory)
    print("| benchmark | scale | time | per unit / comparison | peak memory |")
    print("|---|---|---|---|---|")
    for cells in ROWS:
        print("| " + " | ".join(cells) + " |")
    print()
    worst = max(medians[name] / base for name in cases)
    print(f"- {'met' if worst <= 1.2 else 'MISSED'}: at most 1.2x the check in clear ({worst:.2f}x)")


if __name__ == "__main__":
    main()
