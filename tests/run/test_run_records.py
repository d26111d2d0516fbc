"""`run --format json` and `report --format json` print a versioned document whose JSON Schema ships."""

from __future__ import annotations

from typing import Any

from builders import RepoBuilder, instance, shipped_schema_accepts
from servers import Running


def test_run_and_report_print_documents_the_schema_accepts(
    repo: RepoBuilder, cli: Any, adding: Running
) -> None:
    repo.lve("cat/right", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    repo.lve("cat/wrong", instances={"i.jsonl": [instance("100", True, a=99, b=1)]})  # the model says 101
    ran = cli("run", "--all", "--repeat", "2", "--report", "r.jsonl", "--format", "json", cwd=repo.root)
    reported = cli("report", "r.jsonl", "--format", "json", cwd=repo.root)
    for document in (ran.json(), reported.json()):
        shipped_schema_accepts(document, "run")
        assert document["summary"]["agree"] == 1 and document["summary"]["disagree"] == 1
    assert ran.json()["instances"] == reported.json()["instances"]
