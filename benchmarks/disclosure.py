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


def timed(root: Path, env: dict[str, str], runs: int) -> tuple[float, float, dict[str, int]]:
    """(median seconds, peak MiB, the replay summary) of `runs` checks."""
    measured = [measure(["check", "--all", "--no-cache", "--format", "json"], root, env) for _ in range(runs)]
    summary = json.loads(measured[0][2])["summary"]
    return statistics.median(m[0] for m in measured), max(m[1] for m in measured), summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lves", type=int, default=1000, help="LVEs in the repository")
    parser.add_argument("--withheld", type=int, default=100, help="of which withheld")
    parser.add_argument("--runs", type=int, default=3, help="checks timed of each (the median is shown)")
    options = parser.parse_args()
    print(machine(), file=sys.stderr)
    ratios = []
    with tempfile.TemporaryDirectory(prefix="lvegit-bench-disclosure-") as temporary:
        clear, withheld, identity = repositories(Path(temporary), options.lves, options.withheld)
        scale = f"{options.lves} LVEs, {options.withheld} withheld"
        base, memory, summary = timed(clear, {}, options.runs)
        assert summary["mismatch"] == summary["error"] == 0, summary
        row("check --all (in clear)", f"{options.lves} LVEs", base, "median", memory)
        for name, env in (
            ("without identity", {}),
            ("with identity", {"LVEGIT_DISCLOSURE_IDENTITY": identity}),
        ):
            seconds, memory, summary = timed(withheld, env, options.runs)
            assert summary["mismatch"] == summary["error"] == 0, summary
            skipped = summary["skipped"]
            ratios.append(seconds / base)
            row(
                f"check --all ({name})",
                scale,
                seconds,
                f"{seconds / base:.2f}x clear, {skipped} skipped",
                memory,
            )
    print("| benchmark | scale | time | per unit / comparison | peak memory |")
    print("|---|---|---|---|---|")
    for name, scale, seconds, detail, memory in ROWS:
        print(f"| {name} | {scale} | {seconds} | {detail} | {memory} |")
    print()
    print(
        f"- {'met' if max(ratios) <= 1.2 else 'MISSED'}: at most 1.2x the check in clear ({max(ratios):.2f}x)"
    )


if __name__ == "__main__":
    main()
