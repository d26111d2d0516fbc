"""No byte of a withheld payload in anything lvegit prints or writes: a canary in every payload field
(description, prompt, prompt file, checker code, author, instance responses), every output command in
text and JSON, error paths included, and every file left in the repository, its cache and its outputs."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from lvegit.disclosure.withheld import withhold
from lvegit.lve.repo import Repository

from builders import RepoBuilder, instance
from withholding import ABSTRACT, CANARY, CANARY_TEST, Keys, with_recipients

CUSTOM = f"""from lvegit.checkers import BaseChecker


class Checker(BaseChecker):
    def is_safe(self, prompt, response, param_values=None) -> bool:
        return "{CANARY}" not in response
"""


def _withheld_repository(repo: RepoBuilder, keys: Keys) -> list[Path]:
    with_recipients(repo, keys.public(keys.maintainer))
    repo.lve("cat/clear", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    rows = {"i.jsonl": [instance(CANARY, False, a=1, b=2), instance("5", True, a=2, b=3)]}
    lambda_lve = repo.lve("privacy/leak", CANARY_TEST, instances=rows)
    prompt_file = repo.lve(
        "privacy/file",
        {**CANARY_TEST, "prompt": None, "prompt_file": "test.prompt"},
        files={"test.prompt": json.dumps([{"role": "user", "content": f"{CANARY} {{a}} {{b}}"}])},
        instances=rows,
    )
    custom = repo.lve(
        "privacy/custom",
        {**CANARY_TEST, "checker_args": {"checker_name": "Checker"}},
        files={"checker/checker.py": CUSTOM},
        instances=rows,
    )
    # A broken one: its findings would quote the payload (an unknown placeholder, a failing check).
    broken = repo.lve(
        "privacy/broken",
        {**CANARY_TEST, "prompt": [{"role": "user", "content": f"{{{CANARY}}} {{a}} {{b}}"}]},
        instances={"i.jsonl": [instance(CANARY, True, a=1, b=2)]},
    )
    lves = [lambda_lve, prompt_file, custom, broken]
    for lve_dir in lves:
        withhold(Repository(repo.root), lve_dir, ABSTRACT)
    return lves


def _files_text(*folders: Path) -> str:
    found = []
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_file() and path.name != "payload.age":  # ciphertext
                found.append(f"{path}\n{path.read_bytes().decode('utf-8', 'replace')}")
    return "\n".join(found)


def test_no_output_of_any_command_holds_a_byte_of_a_withheld_payload(
    repo: RepoBuilder, cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys = Keys()
    lves = _withheld_repository(repo, keys)
    key_file = tmp_path / "key.txt"
    key_file.write_text(keys.secret(keys.maintainer))
    at = ("--repo", str(repo.root))
    rel = str(lves[0].relative_to(repo.root))
    commands: list[tuple[str, ...]] = []
    for output in ("text", "json"):
        shape = ("--format", output)
        commands += [
            ("validate", "--all", *shape),
            ("check", "--all", *shape),
            ("check", "--all", "--identity", str(key_file), *shape),
            ("check", "--all", "--no-cache", "--identity", str(key_file), "--strict", *shape),
            ("replay", "--all", *shape),
            ("list", "--all", *shape),
            ("show", rel, *shape),
            ("validate", rel, *shape),
            ("status", *shape),
        ]
    commands += [
        ("readme", "--all"),
        ("readme", "--all", "--check"),
        ("site", str(tmp_path / "site")),
        ("export", "--format", "dataset", "--output", str(tmp_path / "dataset")),
        ("export", "--format", "osv", "--output", str(tmp_path / "osv")),
        ("ids", "list"),
        ("disclosure", "disclose", rel),  # no identity: an error
        ("disclosure", "grant", rel, "--recipient", keys.public(keys.vendor), "--identity", str(tmp_path)),
    ]
    printed = []
    monkeypatch.setenv("LVEGIT_DISCLOSURE_IDENTITY", keys.secret(keys.maintainer))
    printed.append(cli("check", "--all", *at))  # the variable's way
    for command in commands:
        printed.append(cli(*command, *at))
    opened = printed[1 + commands.index(("check", "--all", "--identity", str(key_file), "--format", "text"))]
    assert "privacy/leak/openai--gpt-4o-mini: ok; 2 reproduced" in opened.out, opened.out
    assert "privacy/custom/openai--gpt-4o-mini: ok; 2 reproduced" in opened.out, opened.out
    assert "privacy/broken/openai--gpt-4o-mini: invalid" in opened.out
    everything = "\n".join(r.out + r.err for r in printed)
    assert CANARY not in everything
    assert CANARY not in _files_text(repo.root, tmp_path)
    assert not any(name.startswith("lvegit-withheld-") for name in os.listdir(tmp_path.parent))
