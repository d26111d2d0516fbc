"""The typed, versioned records of `list`, `changed` and `models --format json`: one document each
(schemas `lvegit-list`, `lvegit-changed`, `lvegit-models`, version 1, shipped in lvegit/schemas/)."""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import ConfigDict, Field

from lvegit.base.records import Record, write_schemas
from lvegit.checkers.model_stack import NeededModel
from lvegit.git.changes import Changes

VERSION: Final = 1


class LVERow(Record):
    """One LVE as `list` shows it; a field test.json lacks or gets wrong is null (validate says why)."""

    path: str
    category: str
    name: str
    model: str | None
    checker: str | None
    prompt: Literal["prompt", "multi_run_prompt"] | None
    instances: int
    description: str | None
    loads: bool


class ListDocument(Record):
    """What `lvegit list --format json` prints."""

    model_config = ConfigDict(title=f"lvegit-list version {VERSION}")

    schema_name: Literal["lvegit-list"] = Field(alias="schema")
    version: Literal[1]
    lves: list[LVERow]


class Rename(Record):
    from_: str = Field(alias="from")
    to: str


class ChangedDocument(Record):
    """What `lvegit changed --format json` prints: the LVE folders the comparison touched."""

    model_config = ConfigDict(title=f"lvegit-changed version {VERSION}")

    schema_name: Literal["lvegit-changed"] = Field(alias="schema")
    version: Literal[1]
    base: str
    base_ref: str
    head: str
    changed: list[str]
    removed: list[str]
    renamed: list[Rename]


class HubModel(Record):
    model: str
    cached: bool
    lves: list[str]


class ModelsDocument(Record):
    """What `lvegit models --format json` prints: the hub models the LVEs' checkers need."""

    model_config = ConfigDict(title=f"lvegit-models version {VERSION}")

    schema_name: Literal["lvegit-models"] = Field(alias="schema")
    version: Literal[1]
    models: list[HubModel]


DOCUMENTS: Final[dict[str, type[Record]]] = {
    "list": ListDocument,
    "changed": ChangedDocument,
    "models": ModelsDocument,
}


def shown(document: Record) -> dict[str, Any]:
    return document.model_dump(mode="json", by_alias=True)


def list_document(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return shown(ListDocument(schema="lvegit-list", version=VERSION, lves=[LVERow(**row) for row in rows]))


def changed_document(changes: Changes) -> dict[str, Any]:
    renamed = [Rename(**{"from": old, "to": new}) for new, old in changes.renamed.items()]
    document = ChangedDocument(
        schema="lvegit-changed",
        version=VERSION,
        base=changes.base,
        base_ref=changes.base_ref,
        head=changes.head,
        changed=changes.changed,
        removed=changes.removed,
        renamed=renamed,
    )
    return shown(document)


def models_document(found: list[NeededModel]) -> dict[str, Any]:
    models = [HubModel(model=n.model, cached=n.cached, lves=n.lves) for n in found]
    return shown(ModelsDocument(schema="lvegit-models", version=VERSION, models=models))


if (
    __name__ == "__main__"
):  # python -m lvegit.publish.documents: rewrite the shipped schemas of these documents
    write_schemas(DOCUMENTS, VERSION)
