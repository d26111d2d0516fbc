"""A seeded fuzz over what a pull request holds: test.json fields and bytes, prompt files, instance lines,
folder shapes (links anywhere, folders nested past Python's recursion limit, pipes) and verdict-cache
entries. Whatever it makes of one LVE, every command finishes (exit 0 or 1, never lvegit's own error),
the untouched LVE beside it is judged as usual, and nothing outside the repository changes.

A mutator of our own on random.Random: each example is drawn from its seed alone, so a failure names
the seed that reproduces it (hypothesis was tried first: its generation reads the source files of every
loaded module, and became flaky once a test had loaded a module whose file was gone). Bounded to a few
seconds here (LVEGIT_FUZZ_EXAMPLES, default 12, seeds 0 to 11); `python benchmarks/fuzz.py` runs it long
from a fresh base seed."""

from __future__ import annotations

import json
import os
import random
import tempfile
from pathlib import Path
from typing import Any

import pytest

from builders import RepoBuilder, instance, nest_folders, remove_nested

EXAMPLES = int(os.environ.get("LVEGIT_FUZZ_EXAMPLES", "12"))
FIRST_SEED = int(os.environ.get("LVEGIT_FUZZ_SEED", "0"))  # benchmarks/fuzz.py draws a fresh one

# JSON text that Python's json module cannot even hand back, or hands back in shapes nobody expects.
RAW_JSON = [
    "9" * 4400,
    "-" + "1" * 5000,
    "[" * 3000 + "]" * 3000,
    '{"a":' * 500 + "1" + "}" * 500,
    '"\\u0000"',
    '"\\ud800"',
    "1e999",
    "NaN",
    '"' + "x" * 300 + '\\u0000.prompt"',
    '"../../../../etc/passwd"',
    '"/dev/zero"',
    '"' + "a" * 256 + '"',
    '"test.prompt\\u0000"',
    '"{a.__class__}"',
    '"{{{{"',
]
KEYS = [
    "description",
    "model",
    "checker_args",
    "prompt",
    "prompt_file",
    "multi_run_prompt",
    "prompt_parameters",
    "default_model_args",
    "tags",
    "author",
    "unknown",
]
LINK_PLACES = [
    "test.json",
    "test.prompt",
    "README.md",
    "instances/i.jsonl",
    "instances/new.jsonl",
    "instances",
    "checker",
    "checker/checker.py",
]
LINK_TARGETS = ["outside-file", "outside-folder", "/dev/zero", "itself", "dangling", "test.prompt"]
TEXT = 'ab{}\\"\n\t\x00\x1b\u2028\u00e9\U0001f600/..'


def json_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(7 if depth < 3 else 5)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.choice([0, -1, 2**63, rng.randint(-(10**9), 10**9)])
    if kind == 2:
        return rng.choice([0.5, -1e308, 1e-308])
    if kind in (3, 4):
        return "".join(rng.choice(TEXT) for _ in range(rng.randrange(12)))
    if kind == 5:
        return [json_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {str(json_value(rng, 3)): json_value(rng, depth + 1) for _ in range(rng.randrange(4))}


def fragment(rng: random.Random) -> str:
    return rng.choice(RAW_JSON) if rng.random() < 0.5 else json.dumps(json_value(rng))


def raw_bytes(rng: random.Random) -> bytes:
    return rng.randbytes(rng.randrange(64)) if rng.random() < 0.5 else fragment(rng).encode()


def mutations(rng: random.Random) -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(["field", "test-bytes", "prompt", "line", "link", "deep", "pipe", "cache"])
        if kind == "field":
            found.append((kind, (rng.choice(KEYS), fragment(rng))))
        elif kind == "test-bytes":
            found.append((kind, raw_bytes(rng) if rng.random() < 0.5 else rng.randrange(200)))
        elif kind in ("prompt", "line", "cache"):
            found.append((kind, raw_bytes(rng)))
        elif kind == "link":
            found.append((kind, (rng.choice(LINK_PLACES), rng.choice(LINK_TARGETS))))
        elif kind == "deep":
            found.append((kind, rng.choice([3, 1100])))
        else:
            found.append((kind, rng.choice(["test.prompt", "instances/p.jsonl"])))
    return found


VICTIM_TEST = {"prompt": None, "prompt_file": "test.prompt"}


def apply(lve_dir: Path, outside: Path, kind: str, value: Any) -> None:
    test = lve_dir / "test.json"
    if kind == "field" and test.is_file() and not test.is_symlink():
        key, fragment = value
        text = test.read_text(errors="replace").rstrip().removesuffix("}")
        test.write_text(f'{text}, "{key}": {fragment}}}', errors="surrogateescape")
    elif kind == "test-bytes" and test.is_file() and not test.is_symlink():
        data = test.read_bytes()
        test.write_bytes(data[:value] if isinstance(value, int) else value)
    elif kind == "prompt" and not (lve_dir / "test.prompt").is_symlink():
        (lve_dir / "test.prompt").write_bytes(value)
    elif kind == "line" and (lve_dir / "instances").is_dir() and not (lve_dir / "instances").is_symlink():
        with open(lve_dir / "instances/i.jsonl", "ab") as handle:
            handle.write(value + b"\n")
    elif kind == "link":
        place, target = value
        path = lve_dir / place
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.is_dir():
            return  # a folder stays: links go where files were
        path.parent.mkdir(parents=True, exist_ok=True)
        targets = {
            "outside-file": outside / "secret.txt",
            "outside-folder": outside,
            "itself": Path(path.name),
            "dangling": Path("missing"),
        }
        path.symlink_to(targets.get(target, Path(target)))
    elif kind == "deep":
        nest_folders(lve_dir, value)
    elif kind == "pipe":
        path = lve_dir / value
        if not os.path.lexists(path) and path.parent.is_dir():
            os.mkfifo(path)


def damage_cache(root: Path, value: bytes) -> None:
    for entry in (root / ".lvegit-cache").glob("v1/*/*"):
        entry.write_bytes(value)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


@pytest.mark.parametrize("seed", range(FIRST_SEED, FIRST_SEED + EXAMPLES))
def test_no_pull_request_stops_a_command(cli: Any, seed: int) -> None:
    changes = mutations(random.Random(seed))
    with tempfile.TemporaryDirectory() as scratch:
        outside = Path(scratch) / "outside"
        outside.mkdir()
        (outside / "secret.txt").write_text("outside the repository\n")
        before = snapshot(outside)
        repo = RepoBuilder(Path(scratch) / "lves")
        good = [instance("3", True, a=1, b=2)]
        victim = repo.lve(
            "fuzz/victim",
            VICTIM_TEST,
            files={"test.prompt": "Compute {a} + {b}."},
            instances={"i.jsonl": good},
        )
        repo.lve("fuzz/control", instances={"i.jsonl": good})
        try:
            for kind, value in changes:
                if kind != "cache":
                    apply(victim, outside, kind, value)
            commands = [("check", "--all", "--format", "json"), ("validate", "--all", "--format", "json")]
            commands += [("list", "--format", "json"), ("readme", "--all", "--check")]
            for kind, value in changes:
                if kind == "cache":
                    assert cli("check", "--all", cwd=repo.root).code in (0, 1)
                    damage_cache(repo.root, value)
            commands.append(("check", "--all", "--format", "json"))  # warm, from the cache
            for command in commands:
                result = cli(*command, cwd=repo.root)
                assert result.code in (0, 1), (command, changes, result.err)
                assert "Traceback" not in result.err and "unexpected error" not in result.err, (
                    changes,
                    result.err,
                )
                if command[0] == "check":
                    lves = {lve["path"]: lve for lve in result.json()["lves"]}
                    control = lves["repository/fuzz/control/openai--gpt-4o-mini"]
                    assert [i["status"] for i in control["instances"]] == ["reproduced"], changes
            assert snapshot(outside) == before and sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
        finally:
            remove_nested(repo.root)  # folders nested past rmtree's recursion
