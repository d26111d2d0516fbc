"""The repository's routing file (lvegit.toml, or [tool.lvegit] in its pyproject.toml) as a table, and which
model ids need no entry in it. What each entry means is lvegit.models.routing's; whether a model id can be
routed at all is known here, so that validation can say so without the models layer."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Final, Literal

from lvegit.base.errors import UsageError
from lvegit.base.files import FileProblem, read_text
from lvegit.lve.repo import canonical_model

ROUTING_FILE: Final = "lvegit.toml"
MAX_CONFIG_BYTES: Final = 1024 * 1024


def routing_table(root: Path) -> tuple[dict[str, Any], str]:
    routing = root / ROUTING_FILE
    if os.path.lexists(routing):
        return _parse(root, routing), ROUTING_FILE
    pyproject = root / "pyproject.toml"
    if os.path.lexists(pyproject):
        tool = _parse(root, pyproject).get("tool", {}).get("lvegit", {})
        if tool:
            return tool, "pyproject.toml [tool.lvegit]"
    return {}, ROUTING_FILE


def _parse(root: Path, path: Path) -> dict[str, Any]:
    """A TOML file of the repository (a pull request may change it: read as every such file is)."""
    try:
        return tomllib.loads(read_text(path, MAX_CONFIG_BYTES, within=root, base_name="the repository"))
    except (tomllib.TOMLDecodeError, FileProblem) as exc:
        raise UsageError(f"{path.name}: {exc}") from None


def default_route(model_id: str) -> Literal["offline", "openai"] | None:
    """The backend a model id goes to without an entry: `offline/...` to the offline models, `openai/...`
    (and bare `gpt-...` ids) to OpenAI (or Azure OpenAI); None for any other."""
    if model_id.startswith("offline/"):
        return "offline"
    return "openai" if canonical_model(model_id).startswith("openai/") else None


def route_problem(root: Path, model_id: str) -> str | None:
    """Why a model id cannot be routed in this repository; None when it can."""
    if default_route(model_id) is not None:
        return None
    try:
        table, source = routing_table(root)
    except UsageError as exc:
        return str(exc)
    models = table.get("models")
    if isinstance(models, dict) and model_id in models:
        return None
    return f"no route for '{model_id}': add it to {source} (or use an openai/... or offline/... id)"
