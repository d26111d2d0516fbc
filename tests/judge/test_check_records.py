"""`check --format json` prints a versioned document whose JSON Schema ships."""

from __future__ import annotations

import json
from typing import Any

import jsonschema

from lvegit.judge import records

from builders import RepoBuilder, instance


def test_the_shipped_schema_is_the_generated_one(cli: Any) -> None:
    assert json.loads(records.SCHEMA_FILE.read_text()) == records.json_schema(), (
        "regenerate it: python -m lvegit.judge.records > lvegit/schemas/lvegit-check-v1.json"
    )
    printed = cli("schema", "check")
    assert (printed.code, printed.out) == (0, records.SCHEMA_FILE.read_text())


def test_check_prints_a_document_the_schema_accepts(repo: RepoBuilder, cli: Any) -> None:
    repo.lve("cat/fine", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    repo.lve("cat/wrong", instances={"i.jsonl": [instance("4", True, a=1, b=2)]})
    repo.lve("cat/broken", test={"tags": [{"name": "severity", "value": "extreme"}]})
    checked = cli("check", "--all", "--format", "json", cwd=repo.root)
    document = checked.json()
    jsonschema.Draft202012Validator(json.loads(records.SCHEMA_FILE.read_text())).validate(document)
    assert (checked.code, document["schema"], document["version"]) == (1, "lvegit-check", 1)
    assert document["summary"] == {
        "valid": 2,
        "invalid": 1,
        "reproduced": 1,
        "mismatch": 1,
        "skipped": 0,
        "error": 0,
    }
    [broken] = [lve for lve in document["lves"] if not lve["valid"]]
    assert broken["errors"][0]["field"] == "tags[0].value"
