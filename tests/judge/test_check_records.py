"""`validate`, `replay` and `check --format json` print versioned documents whose JSON Schemas ship."""

from __future__ import annotations

from typing import Any

import pytest

from lvegit.judge import records

from builders import RepoBuilder, instance, shipped_schema_accepts


@pytest.mark.parametrize("kind", list(records.DOCUMENTS))
def test_each_command_prints_a_document_its_schema_accepts(kind: str, repo: RepoBuilder, cli: Any) -> None:
    repo.lve("cat/fine", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    repo.lve("cat/wrong", instances={"i.jsonl": [instance("4", True, a=1, b=2)]})
    repo.lve("cat/broken", test={"tags": [{"name": "severity", "value": "extreme"}]})
    ran = cli(kind, "--all", "--format", "json", cwd=repo.root)
    document = ran.json()
    shipped_schema_accepts(document, kind)
    assert ran.code == 1
    if kind != "replay":
        [broken] = [lve for lve in document["lves"] if not lve["valid"]]
        assert broken["errors"][0]["field"] == "tags[0].value"
    if kind != "validate":
        counts = document["summary"]
        assert (counts["reproduced"], counts["mismatch"]) == (1, 1)
