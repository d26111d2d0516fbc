from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from builders import RepoBuilder, instance, shipped_schema_accepts


def test_show_prints_one_lve(repo: RepoBuilder, cli: Any) -> None:
    repo.lve(
        "privacy/leak",
        {"default_model_args": {"temperature": 0.0}},
        instances={"a.jsonl": [instance("3", True, a=1, b=2), instance("4", False, a=1, b=2)]},
    )
    result = cli("show", "repository/privacy/leak/openai--gpt-4o-mini", "--instances", "1", cwd=repo.root)
    assert (result.code, result.err) == (0, "")
    assert result.out == (
        "repository/privacy/leak/openai--gpt-4o-mini\n"
        "  description: adds two numbers wrongly\n"
        "  model: openai/gpt-4o-mini\n"
        '  checker: LambdaChecker(func="lambda r, a, b: int(r) == int(a) + int(b)")\n'
        "  prompt:\n"
        "    [user] Compute {a} + {b}.\n"
        "  parameters: a, b\n"
        "  model args: temperature=0.0\n"
        "  tags: severity=low\n"
        "  author: tester\n"
        "  instances: 2 instances (1 safe, 1 unsafe)\n"
        "    instances/a.jsonl: 1 safe, 1 unsafe\n"
        "    a.jsonl:1 safe args: temperature=0.0, a=1, b=2; response: 3\n"
    )


def test_show_json_multi_run_and_holes(repo: RepoBuilder, cli: Any) -> None:
    runs = [
        {"name": "ask", "repetitions": 2, "prompt": [{"role": "user", "content": "Hi {x}"}]},
        {
            "name": "again",
            "repetitions": 1,
            "prompt": [
                {"role": "user", "content": "Once more"},
                {"role": "assistant", "variable": "answer"},
                {"role": "user", "content": "Sure?"},
            ],
        },
    ]
    test = {
        "prompt": None,
        "multi_run_prompt": runs,
        "prompt_parameters": ["x"],
        "checker_args": {"checker_name": "MultiRunLambdaChecker", "func": "lambda rs, x: True"},
    }
    repo.lve("rel/runs", test, instances={"i.jsonl": [instance(["a", "b", ["c", "d"]], True, x=1)]})
    path = "repository/rel/runs/openai--gpt-4o-mini"
    view = cli("show", path, "--format", "json", cwd=repo.root).json()
    shipped_schema_accepts(view, "show")
    assert [run["name"] for run in view["prompt"]["runs"]] == ["ask", "again"]
    assert view["prompt"]["runs"][1]["messages"][1] == {
        "role": "assistant",
        "content": None,
        "variable": "answer",
        "image_url": None,
    }
    assert view["instance_files"] == [
        {"file": f"{path}/instances/i.jsonl", "safe": 1, "unsafe": 0, "unreadable_lines": 0, "invalid": 0}
    ]
    assert view["instances"][0]["line"] == 1 and view["checker"]["args"] == {"func": "lambda rs, x: True"}
    text = cli("show", path, cwd=repo.root).out
    assert "    run ask x2:\n      [user] Hi {x}\n" in text
    assert "      [assistant] <the model's response (variable answer)>\n" in text


def test_show_refuses_what_is_not_one_loadable_lve(repo: RepoBuilder, cli: Any) -> None:
    repo.lve("cat/one")
    repo.lve("cat/two")
    repo.lve("cat/broken", raw_test="{")
    several = cli("show", "repository/cat", cwd=repo.root)
    assert several.code == 2 and "repository/cat holds 3 LVEs: show takes one LVE's folder" in several.err
    broken = cli("show", "repository/cat/broken/openai--gpt-4o-mini", cwd=repo.root)
    assert broken.code == 2
    assert broken.err.startswith("lvegit: error: repository/cat/broken/openai--gpt-4o-mini/test.json:1: ")


def test_hostile_text_is_escaped(repo: RepoBuilder, cli: Any) -> None:
    repo.lve("cat/evil", {"description": "red \x1b[31malert\x1b[0m\nsecond line"})
    out = cli("show", "repository/cat/evil/openai--gpt-4o-mini", cwd=repo.root).out
    assert "\x1b" not in out and "  description: red \\x1b[31malert\\x1b[0m\\nsecond line\n" in out


def test_colours_on_a_terminal_only_and_never_with_no_color(repo: RepoBuilder) -> None:
    repo.lve("cat/one", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})

    def on_a_terminal(**environment: str) -> str:
        leader, follower = os.openpty()
        env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"} | environment
        command = [sys.executable, "-m", "lvegit", "show", "repository/cat/one/openai--gpt-4o-mini"]
        subprocess.run(command, cwd=repo.root, stdout=follower, stderr=follower, env=env, check=True)
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal's other side has closed
                break
            if not chunk:
                break
            chunks.append(chunk)
        os.close(leader)
        return b"".join(chunks).decode()

    coloured = on_a_terminal()
    assert "\x1b[1mrepository/cat/one/openai--gpt-4o-mini" in coloured and "\x1b[32msafe" in coloured
    assert "\x1b[36m{a}" in coloured  # placeholders marked
    plain = on_a_terminal(NO_COLOR="1")
    assert "\x1b" not in plain and "safe args:" in plain


def test_bundled_repository_lves_all_show(cli: Any) -> None:
    root = Path(__file__).resolve().parents[2]
    for test_json in sorted((root / "repository").rglob("test.json")):
        assert cli("show", str(test_json.parent), "--repo", str(root)).code == 0
