"""Which backend serves a model id: the routing file, then built-in defaults, never a silent fallback.

The routing file is `lvegit.toml` at the repository root, or `[tool.lvegit]` in its pyproject.toml:

    [models."openai/gpt-4"]
    backend = "openai"                 # openai | azure | transformers | offline
    model = "gpt-4o"                   # the name the backend is asked for
    base_url = "http://localhost:8000/v1"   # optional: any OpenAI-compatible server
    api_key_env = "VLLM_API_KEY"       # optional: the variable holding its key
    timeout = 60                       # optional: seconds per request

    [models."meta/llama-2-7b-chat"]
    backend = "transformers"
    model = "meta-llama/Llama-2-7b-chat-hf"   # a hub id or a local directory
    device = "auto"                    # optional: auto | cuda | cuda:N | mps | cpu (--device wins)
    dtype = "auto"                     # optional: auto | bfloat16 | float16 | float32 (--dtype wins)
    batch_size = 32                    # optional: requests generated together at most

`api_key_env` may name only a model key: a variable whose name ends in `_API_KEY` and does not name a
GitHub or Actions variable (a routing file that a pull request changes must not send the job's token
anywhere). Without an entry: `openai/NAME` (and bare `gpt-...` ids) go to OpenAI, or to Azure OpenAI when
AZURE_OPENAI_ENDPOINT is set; `offline/...` to the offline models; anything else is an error.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lvegit.base.errors import UsageError
from lvegit.lve.repo import canonical_model
from lvegit.lve.routing_file import ROUTING_FILE, Reader, default_route, routing_table
from lvegit.models.base import ChatModel
from lvegit.models.placement import check_device, check_dtype

if TYPE_CHECKING:  # the transformers backend is imported when a local model is routed to
    from lvegit.models.transformers_backend import LocalModels, LocalWeights

BACKENDS = ("openai", "azure", "transformers", "offline")
LOCAL_KEYS = ("device", "dtype", "batch_size")
MODEL_KEY_VARIABLE = re.compile(r"[A-Z][A-Z0-9_]*_API_KEY")
NOT_MODEL_KEYS = ("GITHUB", "ACTIONS_", "RUNNER_")  # GitHub's and the runner's own variables


@dataclass(frozen=True)
class Route:
    backend: str
    model: str
    base_url: str | None = None
    api_key_env: str | None = None
    api_version: str | None = None
    timeout: float = 60.0
    device: str = "auto"  # where a local (transformers) model runs, in which precision, in what batches
    dtype: str = "auto"
    batch_size: int = 32

    def build(self, weights: LocalWeights | None = None, label: str | None = None) -> ChatModel:
        """The backend of this route; `weights`: a loaded local model to share (transformers only);
        `label`: the model id the user wrote, which messages name."""
        if self.backend in ("openai", "azure"):
            from lvegit.models.openai_backend import OpenAIModel

            key = os.environ.get(self.api_key_env) if self.api_key_env else None
            if self.api_key_env and not key:
                raise UsageError(
                    f"the routing file names {self.api_key_env} for '{label or self.model}', which is not set"
                )
            return OpenAIModel(
                self.model,
                azure=self.backend == "azure",
                base_url=self.base_url,
                api_key=key,
                api_version=self.api_version,
                timeout=self.timeout,
                label=label,
            )
        if self.backend == "transformers":
            from lvegit.base.extras import require
            from lvegit.models.transformers_backend import TransformersModel

            require(f"the transformers backend ({self.model})", "transformers", "torch", "transformers")

            return TransformersModel(self.model, self.device, self.dtype, self.batch_size, weights)
        from lvegit.models.offline import OfflineModel

        return OfflineModel(self.model)


def load_routes(root: Path, read: Reader | None = None) -> dict[str, Route]:
    """The routes of the repository's routing file; `read`: where its files come from (the work tree by
    default; see routing_file.routing_table)."""
    table, source = routing_table(root, read)
    models = table.get("models", {})
    if not isinstance(models, dict):
        raise UsageError(f"{source}: 'models' must be a table of model ids")
    routes = {}
    for model_id, entry in models.items():
        if not isinstance(entry, dict):
            raise UsageError(f'{source}: models."{model_id}" must be a table')
        routes[model_id] = _route(entry, f'{source}: models."{model_id}"', model_id)
    return routes


def _route(entry: dict[str, Any], where: str, model_id: str) -> Route:
    unknown = set(entry) - {"backend", "model", "base_url", "api_key_env", "api_version", "timeout"}
    backend = entry.get("backend", "openai")
    if backend not in BACKENDS:
        raise UsageError(f"{where}.backend must be one of {', '.join(BACKENDS)}")
    if backend == "transformers":
        unknown -= set(LOCAL_KEYS)
    if unknown:
        local = [key for key in sorted(unknown) if key in LOCAL_KEYS]
        if local:
            raise UsageError(f'{where}: {", ".join(local)} only apply to backend = "transformers"')
        raise UsageError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    try:
        timeout = float(entry.get("timeout", 60.0))
    except (TypeError, ValueError):
        raise UsageError(f"{where}.timeout must be a number of seconds") from None
    batch_size = entry.get("batch_size", 32)
    if type(batch_size) is not int or batch_size < 1:
        raise UsageError(f"{where}.batch_size must be a whole number of at least 1")
    key_variable = entry.get("api_key_env")
    if key_variable is not None and not is_model_key_variable(key_variable):
        raise UsageError(
            f"{where}.api_key_env: {str(key_variable)[:100]!r} is not a model key variable: a route may "
            "name only a variable whose name ends in _API_KEY, never a GitHub or Actions one"
        )
    return Route(
        backend=backend,
        model=str(entry.get("model", model_id)),
        base_url=entry.get("base_url"),
        api_key_env=entry.get("api_key_env"),
        api_version=entry.get("api_version"),
        timeout=timeout,
        device=check_device(str(entry.get("device", "auto")), f"{where}.device"),
        dtype=check_dtype(str(entry.get("dtype", "auto")), f"{where}.dtype"),
        batch_size=batch_size,
    )


def is_model_key_variable(name: object) -> bool:
    return (
        isinstance(name, str)
        and MODEL_KEY_VARIABLE.fullmatch(name) is not None
        and not any(part in name for part in NOT_MODEL_KEYS)
    )


def resolve(model_id: str, routes: dict[str, Route]) -> Route:
    if model_id in routes:
        return routes[model_id]
    default = default_route(model_id)
    if default == "offline":
        return Route("offline", model_id.removeprefix("offline/"))
    if default == "openai":
        azure = bool(os.environ.get("AZURE_OPENAI_ENDPOINT")) and not os.environ.get("OPENAI_BASE_URL")
        return Route("azure" if azure else "openai", canonical_model(model_id).removeprefix("openai/"))
    raise UsageError(
        f"no backend for model '{model_id}': add it to {ROUTING_FILE}, for example\n"
        f'  [models."{model_id}"]\n  backend = "transformers"\n  model = "<hub id or local directory>"'
    )


class ModelPool:
    """One backend instance per route for the whole run (a transformers model loads once). `device` and
    `dtype` (from --device / --dtype) override the routing file's for every local model."""

    def __init__(
        self,
        root: Path,
        device: str | None = None,
        dtype: str | None = None,
        local_models: LocalModels | None = None,  # None: its own, closed with the pool
        read: Reader | None = None,  # where the routing file comes from (default: the work tree)
    ) -> None:
        self.routes = load_routes(root, read)
        self.device = device
        self.dtype = dtype
        self._models: dict[Route, ChatModel] = {}
        self._got: dict[str, tuple[Route, ChatModel]] = {}  # by model id: a run asks once per attempt
        self._local_models = local_models
        self._owns_local_models = local_models is None

    def get(self, model_id: str) -> tuple[Route, ChatModel]:
        if model_id not in self._got:
            self._got[model_id] = self._get(model_id)
        return self._got[model_id]

    def _get(self, model_id: str) -> tuple[Route, ChatModel]:
        route = resolve(model_id, self.routes)
        weights = None
        if route.backend == "transformers":
            from lvegit.models.transformers_backend import LocalModels

            route = replace(route, device=self.device or route.device, dtype=self.dtype or route.dtype)
            if self._local_models is None:
                self._local_models = LocalModels()
            weights = self._local_models.get(route.model, route.device, route.dtype)
        if route not in self._models:
            self._models[route] = route.build(weights, model_id)
        return route, self._models[route]

    async def close(self) -> None:
        for model in self._models.values():
            await model.close()
        self._models.clear()
        self._got.clear()
        if self._owns_local_models and self._local_models is not None:
            self._local_models.close()
            self._local_models = None
