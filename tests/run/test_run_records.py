"""`run --format json` and `report --format json` print a versioned document whose JSON Schema ships."""

from __future__ import annotations

import json
from typing import Any

import jsonschema

from lvegit.run import records

from builders import RepoBuilder, instance
from servers import Running


def test_the_shipped_schema_is_the_generated_one(cli: Any) -> None:
    assert json.loads(records.SCHEMA_FILE.read_text()) == records.json_schema(), (
        "regenerate it: python -m lvegit.run.records > lvegit/schemas/lvegit-run-v1.json"
    )
    printed = cli("schema", "run")
    assert (printed.code, printed.out) == (0, records.SCHEMA_FILE.read_text())


def test_run_and_report_print_documents_the_schema_accepts(
    repo: RepoBuilder, cli: Any, adding: Running
) -> None:
    repo.lve("cat/right", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    repo.lve("cat/wrong", instances={"i.jsonl": [instance("100", True, a=99, b=1)]})  # the model says 101
    validator = jsonschema.Draft202012Validator(json.loads(records.SCHEMA_FILE.read_text()))
    ran = cli("run", "--all", "--repeat", "2", "--report", "r.jsonl", "--format", "json", cwd=repo.root)
    reported = cli("report", "r.jsonl", "--format", "json", cwd=repo.root)
    for document in (ran.json(), reported.json()):
        validator.validate(document)
        assert (document["schema"], document["version"]) == ("lvegit-run", 1)
        assert document["summary"]["agree"] == 1 and document["summary"]["disagree"] == 1
    assert ran.json()["instances"] == reported.json()["instances"]
    broken = {**ran.json(), "version": 2}
    assert not validator.is_valid(broken)
