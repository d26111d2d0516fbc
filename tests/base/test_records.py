"""Every versioned document's shipped JSON Schema is the one its records generate, `lvegit schema KIND`
prints it, and it offers every document."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest

from lvegit.base.records import json_schema, schema_file
from lvegit.commands.schema import DOCUMENTS
from lvegit.github import results
from lvegit.history import records as history_records
from lvegit.judge import records as judge_records
from lvegit.publish import documents
from lvegit.run import records as run_records

MODULES = (documents, judge_records, run_records, results, history_records)
KINDS = [(module, kind) for module in MODULES for kind in module.DOCUMENTS]


@pytest.mark.parametrize(("module", "kind"), KINDS, ids=[kind for _module, kind in KINDS])
def test_the_shipped_schema_is_the_generated_one(module: ModuleType, kind: str, cli: Any) -> None:
    shipped = schema_file(kind, module.VERSION).read_text()
    assert json.loads(shipped) == json_schema(kind, module.DOCUMENTS[kind], module.VERSION), (
        f"regenerate them: python -m {module.__name__}"
    )
    printed = cli("schema", kind)
    assert (printed.code, printed.out) == (0, shipped)


def test_the_schema_command_offers_every_document_and_only_those() -> None:
    assert sorted(DOCUMENTS) == sorted(kind for _module, kind in KINDS)
