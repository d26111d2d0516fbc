"""The base of the typed records lvegit writes as JSON documents (pydantic; imported only by what writes
or reads such a document), and where their JSON Schemas ship."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel, ConfigDict

SCHEMA_DIR: Final = Path(__file__).resolve().parent.parent / "schemas"


class Record(BaseModel):
    """Fields as written, no coercion (a string is no number, 1 is no boolean), no unknown fields."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


def schema_file(kind: str, version: int) -> Path:
    """Where the JSON Schema of the document `lvegit-KIND`, version VERSION, ships."""
    return SCHEMA_DIR / f"lvegit-{kind}-v{version}.json"


def json_schema(kind: str, document: type[Record], version: int) -> dict[str, Any]:
    """The JSON Schema of a document, generated from its record, with its $id and title."""
    schema = document.model_json_schema(by_alias=True)
    return {"$id": schema_file(kind, version).name, **schema, "title": f"lvegit-{kind} version {version}"}


def write_schemas(documents: Mapping[str, type[Record]], version: int) -> None:
    """Rewrite the shipped schemas of these documents (after a change to their records)."""
    for kind, document in documents.items():
        schema_file(kind, version).write_text(
            json.dumps(json_schema(kind, document, version), indent=2) + "\n"
        )
