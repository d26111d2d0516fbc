"""The typed, versioned records of `list`, `changed`, `models`, `show` and `sandbox --format json`, and of
the ids registry (lve-ids.json): one document each (schemas `lvegit-list`, ..., `lvegit-sandbox`,
`lvegit-ids`, version 1, shipped in lvegit/schemas/)."""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import Field, StringConstraints

from lvegit.base.records import Record, write_schemas
from lvegit.checkers.model_stack import NeededModel
from lvegit.git.changes import Changes
from lvegit.lve.ids import ID

VERSION: Final = 1
ID_PATTERN: Final = f"^{ID.pattern}$"  # an id as lvegit.lve.ids reads it


class LVERow(Record):
    """One LVE as `list` shows it; a field test.json lacks or gets wrong is null (validate says why)."""

    id: str | None = None  # its stable id (lve-ids.json), once the id workflow gave it one
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

    schema_name: Literal["lvegit-list"] = Field(alias="schema")
    version: Literal[1]
    lves: list[LVERow]


class Rename(Record):
    from_: str = Field(alias="from")
    to: str


class ChangedDocument(Record):
    """What `lvegit changed --format json` prints: the LVE folders the comparison touched."""

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

    schema_name: Literal["lvegit-models"] = Field(alias="schema")
    version: Literal[1]
    models: list[HubModel]


class ShownMessage(Record):
    role: Literal["user", "assistant", "system", "developer", "tool"]
    content: str | None
    variable: str | None = None
    image_url: str | None = None
    # only on messages of a tool exchange (an LVE without tools shows its messages as it always did)
    tool_calls: list[dict[str, Any]] | None = Field(default=None, exclude_if=lambda value: value is None)
    tool_call_id: str | None = Field(default=None, exclude_if=lambda value: value is None)


class ShownRun(Record):
    name: str
    repetitions: int
    messages: list[ShownMessage]


class ShownPrompt(Record):
    """The prompt's messages, or for a multi-run LVE each run's."""

    messages: list[ShownMessage] | None = None
    runs: list[ShownRun] | None = None


class ShownChecker(Record):
    name: str
    args: dict[str, Any]


class InstanceFileCounts(Record):
    """An instance file's instances, safe, unsafe and invalid (could not be judged) as recorded, and its lines
    that could not be read."""

    file: str
    safe: int
    unsafe: int
    unreadable_lines: int
    invalid: int = 0


class ShowDocument(Record):
    """What `lvegit show --format json` prints: one LVE, its instance counts and its first instances
    (each line as recorded, with its file and line)."""

    schema_name: Literal["lvegit-show"] = Field(alias="schema")
    version: Literal[1]
    id: str | None = None  # its stable id (lve-ids.json), once the id workflow gave it one
    path: str
    description: str
    model: str
    checker: ShownChecker
    prompt: ShownPrompt
    prompt_parameters: list[str]
    default_model_args: dict[str, Any]
    tags: list[dict[str, Any]]
    author: str | None
    instance_files: list[InstanceFileCounts]
    instances: list[dict[str, Any]]
    # where it declares tools: as test.json declares them, and how often a turn's calls are answered
    tools: list[dict[str, Any]] = Field(default_factory=list, exclude_if=lambda value: not value)
    max_tool_steps: int | None = Field(default=None, exclude_if=lambda value: value is None)


class SandboxDocument(Record):
    """What `lvegit sandbox --format json` prints: how contributed checker code is confined here (mode:
    namespaces, namespaces-without-landlock, landlock or refused), one line per layer, and what each
    attack tried from inside a real worker did ("blocked: ..." or "done: ...")."""

    schema_name: Literal["lvegit-sandbox"] = Field(alias="schema")
    version: Literal[1]
    mode: Literal["namespaces", "namespaces-without-landlock", "landlock", "refused"]
    isolation: list[str]
    probes: dict[str, str]


class IdEntry(Record):
    """An id's LVE (its path), the day it was given and, for the id of an LVE that is gone, the day it was
    retired (an id is never given again)."""

    path: str
    since: str
    retired: str | None = Field(default=None, exclude_if=lambda value: value is None)


class IdsDocument(Record):
    """The registry of stable LVE ids, `lve-ids.json` at the repository root, that `lvegit ids` writes
    (`LVE-YEAR-NNNN`: each with its entry)."""

    schema_name: Literal["lvegit-ids"] = Field(alias="schema")
    version: Literal[1]
    ids: dict[Annotated[str, StringConstraints(pattern=ID_PATTERN)], IdEntry]


DOCUMENTS: Final[dict[str, type[Record]]] = {
    "ids": IdsDocument,
    "list": ListDocument,
    "changed": ChangedDocument,
    "models": ModelsDocument,
    "show": ShowDocument,
    "sandbox": SandboxDocument,
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


def sandbox_document(mode: str, isolation: list[str], probes: dict[str, str]) -> dict[str, Any]:
    document = SandboxDocument.model_validate(
        {
            "schema": "lvegit-sandbox",
            "version": VERSION,
            "mode": mode,
            "isolation": isolation,
            "probes": probes,
        }
    )
    return shown(document)


def models_document(found: list[NeededModel]) -> dict[str, Any]:
    models = [HubModel(model=n.model, cached=n.cached, lves=n.lves) for n in found]
    return shown(ModelsDocument(schema="lvegit-models", version=VERSION, models=models))


if (
    __name__ == "__main__"
):  # python -m lvegit.publish.documents: rewrite the shipped schemas of these documents
    write_schemas(DOCUMENTS, VERSION)
