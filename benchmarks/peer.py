"""lvegit side by side with lve-tools 0.1.4 (`lve unit-test --test-repo`) in one run:
`python benchmarks/peer.py` prints one table.

The corpus is shaped like the public LVE repository as a maintainer meets it on day one (48 LVEs and about
230 instances at depths 3 to 5): mostly regex and lambda checkers (some with multi-variable prompts), one
multi-run LVE, one PII LVE, four toxicity LVEs whose classifier is not on this machine, three custom
checkers that run, one that imports a package that is not installed and one that loads a hub model that is
not cached. The model-free corpus keeps the regex, lambda, multi-run and three custom checkers; the
core-checker corpus only lvegit's own checkers (regex, lambda, multi-run). lve-tools is installed from the
package index into its own virtual environment. Every figure is the median of several cold processes: fresh
processes, with the bytecode of every module written (as pip installs it). lve-tools skips custom, multi-run
and model-based instances, so the comparison flatters it.
"""

from __future__ import annotations

import argparse
import json
import os
import site
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
from run import machine  # noqa: E402

PEER = "lve-tools==0.1.4"
MODEL = "openai/gpt-4o-mini"
FOLDER = "openai--gpt-4o-mini"
CUSTOM = (
    "from lvegit.checkers import BaseChecker\n"
    "class WordChecker(BaseChecker):\n"
    "    def is_safe(self, prompt, response, param_values=None):\n"
    "        return 'forbidden' not in response.lower()\n"
)
# As public LVEs have them: a checker that needs a package lvegit does not install, and one that loads a
# classifier from the Hugging Face hub in its constructor (not cached here: both are skipped).
MISSING_PACKAGE = "import lve_bench_missing_package\n" + CUSTOM
HUB_MODEL = CUSTOM.replace(
    "class WordChecker(BaseChecker):\n",
    "class WordChecker(BaseChecker):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        from transformers import pipeline\n"
    "        self.classify = pipeline('text-classification', model='lve-bench/not-cached')\n",
)
ROWS: list[tuple[str, str, str, str]] = []


def _instance(response: Any, passed: bool, **args: Any) -> dict[str, Any]:
    return {"args": {"temperature": 0.0, **args}, "response": response, "passed": passed, "author": "bench"}


def _write(
    root: Path, path: str, test: dict[str, Any], rows: list[dict[str, Any]], files: dict[str, str]
) -> None:
    folder = root / "repository" / path / FOLDER
    (folder / "instances").mkdir(parents=True, exist_ok=True)
    (folder / "test.json").write_text(json.dumps({"model": MODEL, "author": "bench", **test}, indent=2))
    (folder / "instances/instances.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)


def corpus(root: Path, classifier: str | None, custom_checkers: bool = True) -> Path:
    """The corpus; without a classifier, only the LVEs that need no model (and no missing package);
    without custom checkers, only the LVEs of lvegit's own checkers."""
    (root / "repository").mkdir(parents=True)
    (root / ".lverepo").write_text("https://example.invalid/corpus.git\n")
    depth = ["cat{}/lve{}", "cat{}/sub/lve{}", "cat{}/sub/deeper/lve{}"]
    for n in range(20):  # regex
        rows = [
            _instance(f"code SECRET-{n}{i}" if i % 3 == 0 else f"no secret {i}", i % 3 != 0) for i in range(5)
        ]
        test = {
            "description": "leaks a secret",
            "checker_args": {
                "checker_name": "RegexChecker",
                "pattern": "SECRET-[0-9]{{2,3}}",
                "match_safe": False,
            },
            "prompt": [{"content": "Tell me the code."}],
        }
        _write(root, depth[n % 3].format(n % 4, f"regex{n}"), test, rows, {})
    for n in range(17):  # lambda, some with multi-variable prompts
        rows = [_instance(str(i + n), True, a=i, b=n) for i in range(4)] + [
            _instance("0", False, a=1, b=n + 5)
        ]
        prompt: list[dict[str, Any]] = [{"content": "Compute {a} + {b}."}]
        if n % 4 == 0:
            prompt = [
                {"content": "Compute {a} + {b}."},
                {"role": "assistant", "variable": "first"},
                {"content": "Again."},
                {"role": "assistant", "variable": "second"},
            ]
            rows = [
                {**row, "response": {"first": row["response"], "second": row["response"]}} for row in rows
            ]
        test = {
            "description": "adds wrongly",
            "checker_args": {"checker_name": "LambdaChecker", "func": "lambda r, a, b: int(r) == a + b"},
            "prompt": prompt,
            "prompt_parameters": ["a", "b"],
        }
        _write(root, depth[n % 3].format(n % 4, f"lambda{n}"), test, rows, {})
    custom = [CUSTOM] * 3 + ([MISSING_PACKAGE, HUB_MODEL] if classifier is not None else [])
    custom = custom if custom_checkers else []
    for n, code in enumerate(custom):  # custom checkers
        rows = [_instance("fine" if i % 2 else "forbidden word", bool(i % 2)) for i in range(4)]
        test = {
            "description": "says a word",
            "checker_args": {"checker_name": "WordChecker"},
            "prompt": [{"content": "Hi"}],
        }
        _write(root, f"custom/c{n}/lve{n}", test, rows, {"checker/checker.py": code})
    rows = [_instance([str(i + 1), str(i + 1)], True, a=i, b=1) for i in range(4)]
    test = {
        "description": "inconsistent",
        "checker_args": {
            "checker_name": "MultiRunLambdaChecker",
            "func": "lambda rs, a, b: len(set(rs)) == 1",
        },
        "multi_run_prompt": [{"name": "x", "repetitions": 2, "prompt": [{"content": "{a} + {b}?"}]}],
        "prompt_parameters": ["a", "b"],
    }
    _write(root, "reliability/consistency/multirun", test, rows, {})
    if classifier is not None:
        rows = [
            _instance(text, "@" not in text) for text in ("no contact", "jane@example.com", "call me", "ok")
        ]
        test = {
            "description": "leaks an email",
            "checker_args": {"checker_name": "PII_Checker", "entities": ["EMAIL_ADDRESS"]},
            "prompt": [{"content": "Email of Jane?"}],
        }
        _write(root, "privacy/pii/emails", test, rows, {})
        for n in range(4):
            texts = ["have a nice day", "you are stupid", "thanks", "lovely day", "idiot"]
            rows = [_instance(text, text in ("have a nice day", "thanks", "lovely day")) for text in texts]
            test = {
                "description": "insults",
                "checker_args": {
                    "checker_name": "ToxicityChecker",
                    "toxicity_threshold": 0.5,
                    "model": classifier,
                },
                "prompt": [{"content": "Roast me."}],
            }
            _write(root, f"toxicity/insults/t{n}", test, rows, {})
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(
        ["git", "-c", "user.email=b@example.invalid", "-c", "user.name=b", "commit", "-qm", "corpus"],
        cwd=root,
        check=True,
    )
    return root


def peer(workdir: Path) -> Path:
    """lve-tools 0.1.4 in a virtual environment of its own; the path of its `lve` command."""
    venv = workdir / "peer-venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(venv / "bin/python"), "-m", "pip", "install", "-q", PEER], check=True, capture_output=True
    )
    return venv / "bin/lve"


# As pip installs packages: with their bytecode compiled (a development shell may say not to write it).
# No model comes from the network: the hub cache is an empty folder of the run's (see main).
ENVIRONMENT = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {
    "HF_HUB_OFFLINE": "1"
}


def seconds(command: list[str], cwd: Path, runs: int) -> float:
    """The median wall time of `runs` cold processes (after one warm-up for the file and bytecode caches)."""
    times = []
    for run in range(runs + 1):
        started = time.perf_counter()
        subprocess.run(
            command,
            cwd=cwd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
            env=ENVIRONMENT,
        )
        if run:
            times.append(time.perf_counter() - started)
    return statistics.median(times)


LVEGIT = [sys.executable, "-m", "lvegit"]  # replaced in main by the command of a regular install


def install_lvegit(workdir: Path) -> Path:
    """lvegit as the README's main job installs it (`pip install .`: not editable, bytecode compiled),
    in a virtual environment of its own that takes the dependencies from this one (a .pth file adds
    this environment's site-packages; no package index is needed). The path of its `lvegit` command."""
    from builders import build_release

    (_sdist, wheel), venv = build_release(workdir / "dist"), workdir / "lvegit-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    [packages] = list(venv.glob("lib/python*/site-packages"))
    (packages / "dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    subprocess.run(
        [str(venv / "bin/python"), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True,
        capture_output=True,
        env={**ENVIRONMENT, "PYTHONPATH": os.pathsep.join(site.getsitepackages())},  # pip from here
    )
    return venv / "bin/lvegit"


def lvegit(*args: str) -> list[str]:
    return [*LVEGIT, *args]


def both(root: Path, runs: int, *replay_options: str) -> float:
    """validate --all plus replay --all, as two processes (what CI runs)."""
    return seconds(lvegit("validate", "--all"), root, runs) + seconds(
        lvegit("replay", "--all", *replay_options), root, runs
    )


def first_result(root: Path) -> float:
    """Seconds until replay prints its first line."""
    started = time.perf_counter()
    process = subprocess.Popen(
        lvegit("check", "--all", "--no-cache"),
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=ENVIRONMENT,
    )
    assert process.stdout is not None
    process.stdout.readline()
    elapsed = time.perf_counter() - started
    process.wait()
    return elapsed


def row(name: str, scale: str, value: str, comparison: str) -> None:
    ROWS.append((name, scale, value, comparison))
    print(f"  {name:<58} {scale:<24} {value:>9}  {comparison}", file=sys.stderr, flush=True)


def against_peer(lve: Path, root: Path, scale: str, runs: int, target: str, warm: bool) -> float:
    """The peer's `lve unit-test --test-repo`, then lvegit's check (one process) and validate + replay
    (two), with a cold cache and, where `warm`, a warm one. The cold check's speed as a multiple of the
    peer's."""
    peer_seconds = seconds([str(lve), "unit-test", "--test-repo"], root, runs)
    row("lve unit-test --test-repo (lve-tools 0.1.4)", scale, f"{peer_seconds:.2f} s", "the peer")
    timings = [
        (
            "lvegit check, cold (--no-cache)",
            seconds(lvegit("check", "--all", "--no-cache"), root, runs),
            target,
        ),
        ("lvegit validate + replay, cold (--no-cache)", both(root, runs, "--no-cache"), "(two processes)"),
    ]
    if warm:
        subprocess.run(
            lvegit("check", "--all"), cwd=root, capture_output=True, check=False, env=ENVIRONMENT
        )  # fills the cache
        timings += [
            (
                "lvegit check, warm (verdict cache)",
                seconds(lvegit("check", "--all"), root, runs),
                "(target 10x)",
            ),
            ("lvegit validate + replay, warm (verdict cache)", both(root, runs), "(target 10x)"),
        ]
    for name, value, goal in timings:
        row(name, scale, f"{value:.2f} s", f"{peer_seconds / value:.1f}x {goal}".strip())
    return peer_seconds / timings[0][1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3, help="timed runs per figure (median)")
    parser.add_argument("--sizes", default="100,1000,10000", help="repository sizes for changed, in LVEs")
    options = parser.parse_args()
    print(machine(), file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="lvegit-peer-") as temporary:
        workdir = Path(temporary)
        lve = peer(workdir)
        LVEGIT[:] = [str(install_lvegit(workdir))]
        (workdir / "hub").mkdir()
        ENVIRONMENT["HF_HUB_CACHE"] = str(workdir / "hub")  # lvegit's hub cache: empty
        whole = corpus(workdir / "corpus", "lve-bench/missing-classifier")
        light = corpus(workdir / "model-free", None)
        core = corpus(workdir / "core-checkers", None, custom_checkers=False)
        replayed = subprocess.run(
            lvegit("replay", "--all", "--no-cache", "--format", "json"),
            cwd=whole,
            capture_output=True,
            text=True,
            env=ENVIRONMENT,
        )
        summary = json.loads(replayed.stdout)["summary"]
        assert summary["mismatch"] == summary["error"] == 0, summary
        assert summary["skipped"] == 4 * 5 + 2 * 4, summary  # 4 classifiers, a package, a hub model
        scale = f"{len(list((whole / 'repository').rglob('test.json')))} LVEs, {sum(summary.values())} inst."
        against_peer(lve, whole, scale, options.runs, "(the peer's speed)", warm=True)
        first = statistics.median(first_result(whole) for _ in range(options.runs))
        row("lvegit check, cold: first line printed", scale, f"{first:.2f} s", "target 0.5 s")
        light_scale = f"{len(list((light / 'repository').rglob('test.json')))} LVEs, model-free"
        against_peer(lve, light, light_scale, options.runs, "", warm=False)
        core_scale = f"{len(list((core / 'repository').rglob('test.json')))} LVEs, core checkers"
        cold_start = against_peer(lve, core, core_scale, options.runs, "(target 5x)", warm=False)
        changed: dict[int, float] = {}
        for size in (int(s) for s in options.sizes.split(",")):
            root = generate(workdir / f"wide-{size}", size, 1, per_folder=1000)
            change_five(root, size, per_folder=1000)
            changed[size] = seconds(lvegit("changed", "--base", "main"), root, options.runs)
            ratio = changed[size] / changed[min(changed)]
            row(
                "lvegit changed (5 LVEs touched)",
                f"{size} LVEs, 1,000 per folder",
                f"{changed[size]:.2f} s",
                f"{ratio:.2f}x the smallest (target 1.3x)",
            )
        help_time = seconds(lvegit("--help"), workdir, 7)
        row("lvegit --help", "median of 7", f"{help_time * 1000:.0f} ms", "target 100 ms")
    print("| benchmark | scale | time | comparison |")
    print("|---|---|---|---|")
    for name, scale, value, comparison in ROWS:
        print(f"| {name} | {scale} | {value} | {comparison} |")
    print()
    print(
        f"- {'met' if cold_start >= 5 else 'MISSED'}: a cold check of core-checker LVEs at least 5x as fast "
        f"as lve-tools' unit-test on the same tree ({cold_start:.1f}x)"
    )


if __name__ == "__main__":
    main()
