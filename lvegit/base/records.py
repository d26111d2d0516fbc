"""The base of the typed records lvegit writes as JSON documents (pydantic; imported only by what writes
or reads such a document)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Record(BaseModel):
    """Fields as written, no coercion (a string is no number, 1 is no boolean), no unknown fields."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)
