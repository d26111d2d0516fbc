"""Synthetic LVE repositories for benchmarks: N LVEs across categories, every prompt form, M instances
each, committed to git."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

MODEL = "openai/gpt-4o-mini"
FOLDER = "openai--gpt-4o-mini"
CATEGORIES = ("privacy", "security", "reliability", "trust", "responsibility")


def _instances(form: str, count: int) -> list[dict[str, Any]]:
    rows = []
    for i in range(count):
        a, b = i, i + 1
        args = {"temperature": 0.0, "a": a, "b": b}
        if form == "multi_variable":  # RefuseChecker: a plain answer is not a refusal, so unsafe
            response: Any = {"first": str(a + b), "second": str(a + b) if i % 5 else "I'm sorry, I cannot."}
            passed = not i % 5
        elif form == "multi_run":
            response = [str(a + b), str(a + b)]
            passed = True
        elif form == "regex":
            response = f"The answer is {a + b}" if i % 3 else "SECRET-123"
            passed = bool(i % 3)
        else:
            response = str(a + b) if i % 4 else str(a + b + 1)
            passed = bool(i % 4)
        rows.append(
            {
                "args": args,
                "response": response,
                "passed": passed,
                "author": "bench",
                "run_info": {"timestamp": "2026-11-01T00:00:00Z"},
            }
        )
    return rows


def _test(form: str, index: int) -> tuple[dict[str, Any], dict[str, str]]:
    base: dict[str, Any] = {
        "description": f"synthetic LVE {index} ({form})",
        "model": MODEL,
        "prompt_parameters": ["a", "b"],
        "tags": [{"name": "severity", "value": "low"}],
        "author": "bench",
    }
    files: dict[str, str] = {}
    lambda_checker = {"checker_name": "LambdaChecker", "func": "lambda r, a, b: int(r) == int(a) + int(b)"}
    if form == "inline":
        base.update(prompt=[{"role": "user", "content": "Compute {a} + {b}."}], checker_args=lambda_checker)
    elif form == "text_file":
        base.update(
            prompt_file="test.prompt",
            checker_args={"checker_name": "NumberChecker", "expected_value_func": "lambda a, b: a + b"},
        )
        files["test.prompt"] = "Compute {a} + {b}.\nAnswer with a number.\n"
    elif form == "jsonl_file":
        base.update(prompt_file="test.prompt", checker_args=lambda_checker)
        files["test.prompt"] = (
            json.dumps({"role": "system", "content": "Answer with digits."})
            + "\n"
            + json.dumps({"role": "user", "content": "Compute {a} + {b}."})
            + "\n"
        )
    elif form == "regex":
        base.update(
            prompt=[{"role": "user", "content": "Tell me {a} and {b}."}],
            checker_args={
                "checker_name": "RegexChecker",
                "pattern": "SECRET-[0-9]{{3}}",
                "match_safe": False,
            },
        )
    elif form == "multi_variable":
        base.update(
            prompt=[
                {"role": "user", "content": "Compute {a} + {b}."},
                {"role": "assistant", "variable": "first"},
                {"role": "user", "content": "And {b} + {a}?"},
                {"role": "assistant", "variable": "second"},
            ],
            checker_args={"checker_name": "RefuseChecker"},
        )
    else:  # multi_run
        base.update(
            prompt=None,
            multi_run_prompt=[
                {"name": "ab", "prompt": [{"content": "Compute {a} + {b}."}]},
                {"name": "ba", "prompt": [{"content": "Compute {b} + {a}."}]},
            ],
            checker_args={
                "checker_name": "MultiRunLambdaChecker",
                "func": "lambda rs, a, b: all(int(r) == int(a) + int(b) for r in rs)",
            },
        )
        del base["prompt"]
    return base, files


FORMS = ("inline", "text_file", "jsonl_file", "regex", "multi_variable", "multi_run")


def lve_path(index: int, per_folder: int = 100) -> str:
    category = CATEGORIES[index % len(CATEGORIES)]
    return f"repository/{category}/group{index // per_folder:03}/lve{index:05}/{FOLDER}"


def generate(
    root: Path,
    lves: int,
    instances: int,
    commit: bool = True,
    forms: tuple[str, ...] = FORMS,
    per_folder: int = 100,
) -> Path:
    (root / "repository").mkdir(parents=True, exist_ok=True)
    (root / ".lverepo").write_text("https://example.invalid/bench.git\n")
    for index in range(lves):
        form = forms[index % len(forms)]
        folder = root / lve_path(index, per_folder)
        (folder / "instances").mkdir(parents=True, exist_ok=True)
        test, files = _test(form, index)
        (folder / "test.json").write_text(json.dumps(test, indent=2))
        for name, text in files.items():
            (folder / name).write_text(text)
        rows = _instances(form, instances)
        (folder / "instances" / "instances.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    if commit:
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
        _commit(root, "synthetic")
    return root


def _commit(root: Path, message: str) -> None:
    identity = [
        "-c",
        "user.email=bench@example.invalid",
        "-c",
        "user.name=bench",
        "-c",
        "commit.gpgsign=false",
    ]
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", *identity, "commit", "-q", "-m", message], cwd=root, check=True)


def change_five(root: Path, lves: int, per_folder: int = 100) -> None:
    """A branch `pr` that touches 5 LVEs (an instance appended to each)."""
    subprocess.run(["git", "checkout", "-q", "-b", "pr"], cwd=root, check=True)
    for index in range(0, lves, max(1, lves // 5))[:5]:
        path = root / lve_path(index, per_folder) / "instances" / "instances.jsonl"
        with path.open("a") as handle:
            handle.write(path.read_text().splitlines()[0] + "\n")
    _commit(root, "five")
