"""The results file's records: the shipped JSON Schema is theirs, and a bad file is refused by place."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema
import pytest

from lvegit.base.errors import UsageError
from lvegit.base.records import schema_file
from lvegit.github import results

DOCUMENT: dict[str, Any] = {
    "schema": "lvegit-results",
    "version": 4,
    "lvegit": "0.1.0",
    "repository": "owner/lves",
    "event": "pull_request",
    "pull_request": 7,
    "base_sha": "a" * 40,
    "head_sha": "b" * 40,
    "live": {"enabled": False, "reason": "no API key"},
    "lves": [
        {
            "path": "repository/x/y/openai--gpt-4o-mini",
            "id": "LVE-2026-0001",
            "valid": True,
            "errors": [],
            "warnings": [
                {
                    "severity": "warning",
                    "file": "test.json",
                    "field": "tags",
                    "message": "unknown key",
                    "line": 3,
                }
            ],
            "replay": {"reproduced": 1, "mismatch": 0, "skipped": 0, "error": 0},
            "replayed": [
                {
                    "lve": "repository/x/y/openai--gpt-4o-mini",
                    "file": "instances/i.jsonl",
                    "line": 1,
                    "recorded": True,
                    "replayed": True,
                    "status": "reproduced",
                    "reason": None,
                }
            ],
            "live": [
                {
                    "file": "instances/i.jsonl",
                    "line": 1,
                    "recorded": True,
                    "verdicts": [True],
                    "unsafe": 0,
                    "runs": 1,
                    "interval_95": [0, 0.79],
                    "agree": True,
                    "errors": [],
                    "invalid": 0,
                }
            ],
            "appended": [{"file": "instances/i.jsonl", "passed": True, "response": ["a", {"b": 1}]}],
            "change": {
                "status": "modified",
                "renamed_from": None,
                "changed": ["test.json: prompt"],
                "instances_added": 1,
                "instances_removed": 0,
                "instances_unchanged": 0,
                "added": [
                    {
                        "file": "repository/x/y/openai--gpt-4o-mini/instances/i.jsonl",
                        "line": 1,
                        "passed": True,
                        "prompt": "user: 1 + 2?",
                        "response": "3",
                        "judged": None,
                    }
                ],
            },
            "readme": "README.md is out of date: run lvegit readme repository/x/y/openai--gpt-4o-mini",
            "history": [
                {
                    "lve": "repository/x/y/openai--gpt-4o-mini",
                    "model": "openai/gpt-4o-mini",
                    "state": "fixed",
                    "attempts": 90,
                    "failed": 0,
                    "invalid": 0,
                    "first_reproduced": {"at": "2026-09-07T03:17:00Z", "version": "gpt-4o-mini-v1"},
                    "last_reproduced": {"at": "2026-09-14T03:17:00Z", "version": "gpt-4o-mini-v1"},
                    "fixed_in": {"at": "2026-09-21T03:17:00Z", "version": "gpt-4o-mini-v2"},
                    "regressed_in": None,
                    "current": {
                        "version": "gpt-4o-mini-v2",
                        "unsafe": 0,
                        "attempts": 80,
                        "interval_95": [0, 0.0458],
                    },
                    "last_verdict": {"at": "2026-09-28T03:17:00Z", "version": "gpt-4o-mini-v2"},
                }
            ],
            "severity": "0.0 none: reproduces on no model now",
        }
    ],
    "removed": [],
    "totals": dict.fromkeys(results.Totals.model_fields, 0),
    "failures": [],
    "passed": True,
    "history": None,
    "trust": [],
}


def test_a_results_file_fits_the_shipped_schema_and_reads_back() -> None:
    shipped = json.loads(schema_file("results", results.VERSION).read_text())
    jsonschema.Draft202012Validator.check_schema(shipped)
    jsonschema.validate(DOCUMENT, shipped)
    assert results.validate(DOCUMENT).model_dump(mode="json", by_alias=True) == DOCUMENT


def change(path: str, value: Any) -> dict[str, Any]:
    document = copy.deepcopy(DOCUMENT)
    *parents, last = path.split(".")
    target: Any = document
    for part in parents:
        target = target[int(part)] if part.isdigit() else target[part]
    if value is KeyError:
        del target[last]
    else:
        target[last] = value
    return document


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("lves.0.replayed.0.line", "1", "lves[0].replayed[0].line: Input should be a valid integer"),
        ("totals.changed", True, "totals.changed: Input should be a valid integer"),
        ("lves.0.valid", 1, "lves[0].valid: Input should be a valid boolean"),
        ("lves.0.replayed.0.status", "fine", "lves[0].replayed[0].status: Input should be 'reproduced'"),
        ("lves.0.live.0.verdicts", "yes", "lves[0].live[0].verdicts: Input should be a valid array"),
        ("head_sha", KeyError, "head_sha: Field required"),
        ("lves.0.injected", "<script>", "lves[0].injected: Extra inputs are not permitted"),
        ("lves", "<script>", "lves: Input should be a valid array"),
        ("lves.0.change.added.0.line", "1", "lves[0].change.added[0].line: Input should be a valid integer"),
        ("lves.0.change.status", "gone", "lves[0].change.status: Input should be 'added'"),
        ("lves.0.change.evil", 1, "lves[0].change.evil: Unexpected keyword argument"),
        ("lves.0.change.added.0.prompt", KeyError, "lves[0].change.added[0].prompt: Field required"),
    ],
)
def test_a_bad_field_is_refused_naming_its_place(path: str, value: Any, message: str) -> None:
    document = change(path, value)
    with pytest.raises(UsageError) as error:
        results.validate(document)
    assert str(error.value).startswith(f"results file: {message}")
    with pytest.raises(jsonschema.ValidationError):  # the shipped schema refuses it too
        jsonschema.validate(document, json.loads(schema_file("results", results.VERSION).read_text()))


def test_another_kind_or_version_of_file_is_refused_first() -> None:
    for document in (change("version", 1), change("schema", "other"), ["not", "an", "object"]):
        with pytest.raises(UsageError, match="results file: "):
            results.validate(document)
