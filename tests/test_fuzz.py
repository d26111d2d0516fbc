"""A seeded fuzz over what a pull request holds: test.json fields and bytes, prompt files, instance lines,
recorded judgements, folder shapes (links anywhere, folders nested past Python's recursion limit, pipes,
names that are not UTF-8), run-history files and verdict-cache entries, and over the scanner reports
`lvegit import` reads. Whatever it makes of one LVE, every command finishes (exit 0 or 1, or 2 for a
history or report it names, never lvegit's own error), the untouched LVE beside it is judged as usual, and
nothing outside the repository changes.

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

from builders import JUDGED_TEST, RepoBuilder, instance, nest_folders, remove_nested

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


KINDS = ["field", "test-bytes", "prompt", "line", "link", "deep", "pipe", "cache", "name", "judgement"]
KINDS += ["history", "report"]


def mutations(rng: random.Random) -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(KINDS)
        if kind == "name":
            found.append((kind, rng.choice([b"caf\xe9", b"\xff\xfe", b"a\nb", b"\x1b[2J", rng.randbytes(8)])))
        elif kind == "judgement":
            answers = rng.choice([[], ["unsafe"], ["safe", "unsafe"], [json_value(rng)], json_value(rng)])
            judgement = {"judge": "openai/judge-model", "answers": answers, "verdicts": json_value(rng)}
            found.append((kind, rng.choice([judgement, json_value(rng)])))
        elif kind in ("history", "report"):
            found.append((kind, raw_bytes(rng) if rng.random() < 0.5 else rng.randrange(4)))
        elif kind == "field":
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


def rename(lve_dir: Path, name: bytes) -> None:
    """Give the LVE's name folder a name of these bytes (after every other change to it)."""
    folder = lve_dir.parent
    safe = name.replace(b"/", b"_").replace(b"\0", b"_")
    if safe not in (b"", b".", b"..", b"control", b"judged") and folder.is_dir():
        os.rename(folder, os.fsdecode(os.fsencode(folder.parent) + b"/" + safe))


def judged_line(value: Any) -> bytes:
    return json.dumps({**instance("a pin", False, task="pick a lock"), "judgement": value}).encode()


def history_file(root: Path, value: bytes | int) -> None:
    """A file with a run file's name in history/: bytes, or a run whose rows hold nulls, constant values
    or another schema."""
    folder = root / "history"
    folder.mkdir(exist_ok=True)
    path = folder / "2026-09-07T030000Z-0123456789abcdef.parquet"
    if isinstance(value, bytes):
        path.write_bytes(value)
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    from lvegit.history.store import arrow_schema

    schema = arrow_schema()
    if value == 3:
        pq.write_table(pa.table({"lve": ["x"]}), path)
        return
    rows = [1, 1000, 0][value]  # every column empty
    pq.write_table(
        pa.Table.from_arrays([pa.nulls(rows, field.type) for field in schema], schema=schema), path
    )


def scanner_report(folder: Path, value: bytes | int) -> list[tuple[str, ...]]:
    """A garak report and a promptfoo results file made of fuzz: the import commands to run on them."""
    garak, promptfoo = folder / "garak.report.jsonl", folder / "promptfoo.json"
    if isinstance(value, bytes):
        garak.write_bytes(value + b"\n" + value)
        promptfoo.write_bytes(value)
    else:
        setup = {"entry_type": "start_run setup", "plugins.target_name": ["..", "\x00", "a/b/../c", 7][value]}
        attempt = {
            "entry_type": "attempt",
            "status": 2,
            "probe_classname": "dan.Dan",
            "prompt": [None, "x", {}, 1][value],
        }
        attempt["outputs"] = [["\ud800"], [None], "x", [{"text": 1}]][value]
        attempt["detector_results"] = {"dan.DAN": [[float("inf")], ["1"], None, [1e308]][value]}
        garak.write_text(json.dumps(setup) + "\n" + json.dumps(attempt) + "\n")
        promptfoo.write_text(
            json.dumps({"version": 3, "results": {"prompts": value, "results": [{"provider": {"id": ".."}}]}})
        )
    return [("import", "garak", str(garak)), ("import", "promptfoo", str(promptfoo))]


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
        judged = repo.lve("fuzz/judged", JUDGED_TEST)
        commands: list[tuple[str, ...]] = []
        try:
            for kind, value in changes:
                if kind == "judgement":
                    (judged / "instances").mkdir(exist_ok=True)
                    with open(judged / "instances/i.jsonl", "ab") as handle:
                        handle.write(judged_line(value) + b"\n")
                elif kind == "history":
                    history_file(repo.root, value)
                    commands.append(("status", "--all", "--format", "json"))
                elif kind == "report":
                    commands += scanner_report(Path(scratch), value)
                elif kind not in ("cache", "name"):
                    apply(victim, outside, kind, value)
            names = [value for kind, value in changes if kind == "name"]
            if names:
                rename(victim, names[0])
            commands += [("check", "--all", "--format", "json"), ("validate", "--all", "--format", "json")]
            commands += [("list", "--format", "json"), ("readme", "--all", "--check")]
            for kind, value in changes:
                if kind == "cache":
                    assert cli("check", "--all", cwd=repo.root).code in (0, 1)
                    damage_cache(repo.root, value)
            commands.append(("check", "--all", "--format", "json"))  # warm, from the cache
            for command in commands:
                result = cli(*command, cwd=repo.root)
                # a broken history or scanner report is a usage error naming it
                allowed = (0, 1, 2) if command[0] in ("status", "import") else (0, 1)
                assert result.code in allowed, (command, changes, result.err)
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
