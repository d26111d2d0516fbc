"""The repository's routing file (lvegit.toml, or [tool.lvegit] in its pyproject.toml) as a table, and which
model ids need no entry in it. What each entry means is lvegit.models.routing's; whether a model id can be
routed at all is known here, so that validation can say so without the models layer."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, Literal

from lvegit.base.errors import UsageError
from lvegit.base.files import FileProblem, read_text
from lvegit.lve.repo import canonical_model

ROUTING_FILE: Final = "lvegit.toml"
PYPROJECT: Final = "pyproject.toml"
ROUTING_FILES: Final = (ROUTING_FILE, PYPROJECT)  # the files that say where model requests go
MAX_CONFIG_BYTES: Final = 1024 * 1024

# The text of a file at the repository root, by name; None where there is none.
Reader = Callable[[str], str | None]


def work_tree(root: Path) -> Reader:
    """The repository's files as they are on disk (a pull request may change them: read as every such
    file is, inside the repository and under the size limit)."""

    def read(name: str) -> str | None:
        path = root / name
        if not os.path.lexists(path):
            return None
        try:
            return read_text(path, MAX_CONFIG_BYTES, within=root, base_name="the repository")
        except FileProblem as exc:
            raise UsageError(f"{name}: {exc}") from None

    return read


def routing_table(root: Path, read: Reader | None = None) -> tuple[dict[str, Any], str]:
    """The routing table and where it came from; `read`: where the files come from (default: the work
    tree; the Action reads them at the base commit of a pull request)."""
    read = read or work_tree(root)
    text = read(ROUTING_FILE)
    if text is not None:
        return _parse(ROUTING_FILE, text), ROUTING_FILE
    text = read(PYPROJECT)
    if text is not None:
        tools = _parse(PYPROJECT, text).get("tool", {})
        tool = tools.get("lvegit", {}) if isinstance(tools, dict) else {}
        if tool:
            return tool, "pyproject.toml [tool.lvegit]"
    return {}, ROUTING_FILE


def _parse(name: str, text: str) -> dict[str, Any]:
    import tomllib  # only where a routing file or pyproject.toml is there to read

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{name}: {exc}") from None


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
