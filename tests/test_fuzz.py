"""A seeded fuzz over what a pull request holds: test.json fields and bytes, prompt files, instance lines,
folder shapes (links anywhere, folders nested past Python's recursion limit, pipes) and verdict-cache
entries. Whatever it makes of one LVE, every command finishes (exit 0 or 1, never lvegit's own error),
the untouched LVE beside it is judged as usual, and nothing outside the repository changes.

Bounded to a few seconds here (LVEGIT_FUZZ_EXAMPLES, default 12, always the same examples);
`python benchmarks/fuzz.py` runs it long with fresh seeds."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders import RepoBuilder, instance, nest_folders, remove_nested

EXAMPLES = int(os.environ.get("LVEGIT_FUZZ_EXAMPLES", "12"))
FRESH = os.environ.get("LVEGIT_FUZZ_FRESH") == "1"  # new seeds each run (the long run in benchmarks/)

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
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
FRAGMENTS = st.sampled_from(RAW_JSON) | JSON_VALUES.map(json.dumps)
KEYS = st.sampled_from(
    [
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
)
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


@st.composite
def mutations(draw: st.DrawFn) -> list[tuple[str, Any]]:
    kinds = st.sampled_from(["field", "test-bytes", "prompt", "line", "link", "deep", "pipe", "cache"])
    found = []
    for kind in draw(st.lists(kinds, min_size=1, max_size=3)):
        if kind == "field":
            found.append((kind, (draw(KEYS), draw(FRAGMENTS))))
        elif kind == "test-bytes":
            found.append((kind, draw(st.binary(max_size=64) | st.integers(0, 200))))
        elif kind in ("prompt", "line"):
            found.append((kind, draw(st.binary(max_size=64) | FRAGMENTS.map(str.encode))))
        elif kind == "link":
            found.append((kind, (draw(st.sampled_from(LINK_PLACES)), draw(st.sampled_from(LINK_TARGETS)))))
        elif kind == "deep":
            found.append((kind, draw(st.sampled_from([3, 1100]))))
        elif kind == "pipe":
            found.append((kind, draw(st.sampled_from(["test.prompt", "instances/p.jsonl"]))))
        else:
            found.append((kind, draw(st.binary(max_size=32) | FRAGMENTS.map(str.encode))))
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


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not FRESH,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(changes=mutations())
def test_no_pull_request_stops_a_command(cli: Any, changes: list[tuple[str, Any]]) -> None:
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
