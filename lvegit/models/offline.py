"""Offline models for demos and tests, chosen explicitly with an `offline/...` model id; lvegit never falls
back to one for a real model."""

from __future__ import annotations

from typing import Any

from lvegit.base.errors import UsageError
from lvegit.lve.prompt import Message, Role
from lvegit.models.base import DEFAULT_CONCURRENCY, Completion


class OfflineModel:
    """`offline/echo` answers with the last user message; `offline/constant:TEXT` always answers TEXT."""

    backend = "offline"
    concurrency = DEFAULT_CONCURRENCY

    def __init__(self, name: str) -> None:
        kind, _, text = name.partition(":")
        if kind not in ("echo", "constant"):
            raise UsageError(
                f"unknown offline model 'offline/{name}': use offline/echo or offline/constant:TEXT"
            )
        self.name = name
        self.kind = kind
        self.text = text

    async def complete(self, messages: list[Message], model_args: dict[str, Any]) -> Completion:
        if self.kind == "constant":
            return Completion(self.text, f"offline/{self.name}")
        last_user = next((m.content or "" for m in reversed(messages) if m.role == Role.user), "")
        return Completion(last_user, "offline/echo")

    async def close(self) -> None:
        return None
