"""What contributed checker code asks the Hugging Face hub for, learnt inside the sandbox worker.

The worker has no network and sees the local hub cache read-only (HF_HUB_OFFLINE=1, HF_HUB_CACHE). A
checker that loads `pipeline("text-classification", model="org/name")` reaches huggingface_hub's
`hf_hub_download` or `snapshot_download`; the worker wraps both as their modules load (an import hook, so
that a checker that never touches the hub pays nothing) and records each model id asked for, and those
the cache could not answer. A checker that then fails is skipped as one whose model is missing, naming the
model, instead of failing with the hub's "check your internet connection"; the ids asked for are kept so
that `lvegit models` can list and download them outside the sandbox.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

# Modules whose function is wrapped once the module has run: (module, function).
WRAPPED = {
    "huggingface_hub.file_download": "hf_hub_download",
    "huggingface_hub._snapshot_download": "snapshot_download",
}
# What huggingface_hub raises when the cache cannot answer and the network is off (by name: its module
# layout has moved between versions).
NOT_CACHED = ("LocalEntryNotFoundError", "OfflineModeIsEnabled")


@dataclass
class HubRequests:
    """The model ids asked for, in order, and those the local cache did not hold."""

    asked: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    def wrap(self, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def asking(*args: Any, **kwargs: Any) -> Any:
            repo_id = kwargs.get("repo_id", args[0] if args else None)
            model = (
                repo_id if kwargs.get("repo_type") in (None, "model") and isinstance(repo_id, str) else None
            )
            if model is not None and model not in self.asked:
                self.asked.append(model)
            try:
                return function(*args, **kwargs)
            except Exception as exc:
                if model is not None and model not in self.missing and _not_cached(exc):
                    self.missing.append(model)
                raise

        return asking

    def install(self) -> None:
        """Wrap the hub's download functions when (if ever) their modules are imported."""
        sys.meta_path.insert(0, _WrapOnImport(self))


def _not_cached(exc: BaseException) -> bool:
    return any(cls.__name__ in NOT_CACHED for cls in type(exc).__mro__)


class _WrapOnImport(importlib.abc.MetaPathFinder):
    def __init__(self, requests: HubRequests) -> None:
        self.requests = requests

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in WRAPPED:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        loader = spec.loader if spec is not None else None
        if spec is None or not isinstance(loader, importlib.abc.Loader):
            return None
        run = loader.exec_module
        name, requests = WRAPPED[fullname], self.requests

        def exec_module(module: ModuleType) -> None:
            run(module)
            setattr(module, name, requests.wrap(getattr(module, name)))

        loader.exec_module = exec_module  # type: ignore[method-assign]  # this spec's own loader
        return spec
