"""withheld.json: the public abstract of a withheld LVE, described once as a pydantic-core schema in the
style of lvegit/lve/schema.py (validated field by field by `lvegit validate`, printed by `lvegit schema
withheld`). It says what the LVE is without its payload: a description written for the public, the model,
the checker's kind, its tags (taxonomy, severity), the embargo, the vendor's contact, the reporter's
credit, who can read the payload and the commitment to it."""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from pydantic_core import core_schema as cs

from lvegit.base.files import FileProblem, parse_json, read_text
from lvegit.disclosure.envelope import RECIPIENT_PATTERN
from lvegit.lve.problems import Problems
from lvegit.lve.repo import WITHHELD_FILE
from lvegit.lve.schema import (
    PATTERN_MESSAGES,
    STRING,
    TEXT,
    Contributed,
    Tag,
    _custom,
    _described,
    field,
    field_by_field,
    listed,
    optional,
    part,
)

MAX_ABSTRACT_BYTES = 256 * 1024
DATE_PATTERN: Final = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
SHA256_PATTERN: Final = r"^[0-9a-f]{64}$"
PATTERN_MESSAGES.update(
    {
        DATE_PATTERN: "must be a date written YYYY-MM-DD",
        SHA256_PATTERN: "must be a SHA-256 in hex (64 lowercase hex digits)",
        RECIPIENT_PATTERN: "must be an age X25519 recipient (age1... public key)",
    }
)


def _real_date(value: str) -> str:
    try:
        datetime.date.fromisoformat(value)
    except ValueError:
        raise _custom("date", "{value} is no date", {"value": repr(value)}) from None
    return value


DATE: Final = cs.no_info_after_validator_function(_real_date, cs.str_schema(pattern=DATE_PATTERN))


class Reader(Contributed):
    """One recipient who can read the payload: their age public key, and who they are."""

    __slots__ = ()
    key: str
    name: str | None


part(
    Reader,
    {
        "key": field(cs.str_schema(pattern=RECIPIENT_PATTERN), description="an age X25519 public key"),
        "name": optional(STRING, "who holds it (the maintainers, a vendor)"),
    },
)


def _keys_once(readers: list[Reader]) -> list[Reader]:
    keys = [reader.key for reader in readers]
    for index, key in enumerate(keys):
        if key in keys[:index]:
            raise _custom("listed_twice", "'{key}' is listed twice", {"key": key})
    return readers


class Commitment(Contributed):
    __slots__ = ()
    sha256: str


part(
    Commitment,
    {"sha256": field(cs.str_schema(pattern=SHA256_PATTERN), description="of the canonical payload tar")},
)


class WithheldFile(Contributed):
    """A withheld LVE's withheld.json."""

    __slots__ = ()
    description: str
    model: str
    checker: str
    tags: list[Tag]
    withheld_on: str
    embargo_until: str
    vendor_contacted_on: str | None
    reporter: str | None
    readers: list[Reader]
    commitment: Commitment


part(
    WithheldFile,
    {
        "description": field(TEXT, description="what the LVE is, written for the public: no payload"),
        "model": field(TEXT, description="the model id, e.g. openai/gpt-4o-mini"),
        "checker": field(TEXT, description="the checker's kind (its name; 'custom' for the LVE's own)"),
        "tags": field(listed(Tag.schema), factory=list),
        "withheld_on": field(DATE, description="when the payload was first withheld"),
        "embargo_until": field(DATE, description="the date after which the payload may be disclosed"),
        "vendor_contacted_on": optional(_described(DATE, "when the model's vendor was told")),
        "reporter": optional(_described(STRING, "the credit the reporter asked for")),
        "readers": field(
            cs.no_info_after_validator_function(_keys_once, listed(Reader.schema, 1)),
            description="exactly the recipients payload.age is encrypted to",
        ),
        "commitment": field(Commitment.schema),
    },
    title="A withheld LVE's withheld.json",
    json_schema_extra={
        "description": "The public abstract of an LVE whose payload (payload.age beside it) is encrypted "
        "to its readers until disclosure; lvegit validate also checks the envelope against it."
    },
)


@dataclass(frozen=True)
class Abstract:
    """A withheld.json as read: its valid fields, and the text it was read from."""

    values: dict[str, Any]

    @property
    def readers(self) -> list[str]:
        return [reader.key for reader in self.values.get("readers", [])]

    @property
    def embargo_until(self) -> str:
        return str(self.values.get("embargo_until", "an unknown date"))

    def get(self, name: str, default: Any = None) -> Any:
        return self.values.get(name, default)


def read_abstract(lve_dir: Path, problems: Problems) -> Abstract | None:
    """The abstract of a withheld LVE, each field validated on its own (one bad field hides no other);
    None where withheld.json cannot be read as a JSON object."""
    try:
        data = parse_json(read_text(lve_dir / WITHHELD_FILE, MAX_ABSTRACT_BYTES, within=lve_dir))
    except FileProblem as exc:
        problems.error("", str(exc), exc.line)
        return None
    if not isinstance(data, dict):
        problems.error("", "must be a JSON object")
        return None
    values = field_by_field(WithheldFile, data, problems)
    return Abstract(values)


def abstract_json(values: dict[str, Any]) -> str:
    """withheld.json's text for these fields (as validated, or plain values), keys in the schema's order."""

    def plain(value: Any) -> Any:
        if isinstance(value, Contributed):
            return {k: plain(v) for k, v in value.as_dict().items() if v is not None}
        if isinstance(value, list):
            return [plain(item) for item in value]
        return value

    ordered = {
        name: plain(values[name]) for name in WithheldFile.model_fields if values.get(name) is not None
    }
    WithheldFile.validate(ordered)  # lvegit never writes an abstract its own validation refuses
    return json.dumps(ordered, indent=2, ensure_ascii=False) + "\n"
