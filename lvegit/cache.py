"""Content-addressed replay verdicts, so that re-checking an unchanged repository builds no checker.

The key is a hash of everything that decides a replayed verdict: lvegit's version, the checker (name,
arguments with the instance's parameters filled in, the source of a custom checker, and for a model-based
checker the model and the versions of the libraries that run it), the prompts as sent and the stored
response. An entry holds the verdict, or the reason the checker gave to skip the instance; outcomes that
depend on the machine (a model that is not installed, an error) are never stored.

Entries are small files under `<dir>/v1/<2 hex>/<key>`: written to a temporary file and renamed, so
concurrent runs never read half an entry; an entry that does not parse is ignored and written again; past
`max_entries` the oldest go. A cache directory that git tracks is refused: a pull request could commit
entries with forged verdicts.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import json
import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lvegit import __version__
from lvegit.checkers import BUILTIN_CHECKERS, MODEL_CHECKERS, substitute_args
from lvegit.checkers.custom import read_checker_sources
from lvegit.checkers.model_based import model_identity
from lvegit.conversation import prompts_to_send
from lvegit.errors import LvegitError
from lvegit.instances import Instance
from lvegit.spec import LVE

CACHE_DIR = ".lvegit-cache"
FORMAT = "v1"
MAX_ENTRIES = 200_000


@dataclass(frozen=True)
class Outcome:
    """What replay learned from the checker: a verdict (with what judged it, for a mismatch's note), or
    why the checker skipped the instance."""

    verdict: bool | None = None
    skip: str | None = None
    note: str | None = None

    def as_json(self) -> dict[str, Any]:
        if self.skip is not None:
            return {"skip": self.skip}
        return {"verdict": self.verdict, "note": self.note}

    @classmethod
    def from_json(cls, data: Any) -> Outcome | None:
        if not isinstance(data, dict):
            return None
        if set(data) == {"skip"} and isinstance(data["skip"], str):
            return cls(skip=data["skip"])
        if set(data) == {"verdict", "note"} and isinstance(data["verdict"], bool):
            note = data["note"]
            return cls(verdict=data["verdict"], note=note if isinstance(note, str) else None)
        return None


@functools.cache
def _library_versions(names: tuple[str, ...]) -> dict[str, str]:
    versions = {}
    for name in names:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            versions[name] = importlib.metadata.version(name)
    return versions


@dataclass
class VerdictCache:
    directory: Path
    writable: bool = True
    max_entries: int = MAX_ENTRIES
    written: int = 0
    _checker_identity: dict[str, str] = field(default_factory=dict)

    @property
    def entries(self) -> Path:
        return self.directory / FORMAT

    def checker_identity(self, lve: LVE) -> str:
        """Everything about an LVE's checker that is the same for all its instances (computed once)."""
        if lve.rel not in self._checker_identity:
            identity: dict[str, Any] = {"lvegit": __version__, "checker": lve.checker_name}
            if lve.checker_name not in BUILTIN_CHECKERS:
                identity["sources"] = read_checker_sources(lve.dir)
            elif lve.checker_name in MODEL_CHECKERS:
                identity["model"] = model_identity(lve.checker_name, lve.checker_args)
                identity["libraries"] = _library_versions(
                    ("transformers", "torch", "presidio-analyzer", "presidio-anonymizer", "spacy")
                )
            self._checker_identity[lve.rel] = json.dumps(identity, sort_keys=True, default=str)
        return self._checker_identity[lve.rel]

    def key(self, lve: LVE, instance: Instance) -> str | None:
        """The entry's key; None when the instance cannot be keyed (replay reports why)."""
        params, _model_args = lve.split_args(instance.args)
        try:
            identity = self.checker_identity(lve)
            args = substitute_args(lve, instance.args)
            prompts = [[m.as_json() for m in prompt] for prompt in prompts_to_send(lve, params)]
        except LvegitError:
            return None
        material = [identity, args, prompts, params, instance.response]
        return hashlib.sha256(json.dumps(material, sort_keys=True, default=str).encode()).hexdigest()

    def _path(self, key: str) -> Path:
        return self.entries / key[:2] / key

    def get(self, key: str) -> Outcome | None:
        try:
            return Outcome.from_json(json.loads(self._path(key).read_bytes()))
        except (OSError, ValueError):
            return None

    def put(self, key: str, outcome: Outcome) -> None:
        if not self.writable:
            return
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(descriptor, "w") as handle:
                json.dump(outcome.as_json(), handle)
            os.replace(temporary, path)  # atomic: readers see the old entry or the new one
        except OSError:
            return  # a cache that cannot be written is only slower
        self.written += 1

    def prune(self) -> None:
        """Keep at most max_entries: the oldest go (checked only after a run wrote entries)."""
        if not self.written or not self.entries.is_dir():
            return
        files = [entry for folder in self.entries.iterdir() if folder.is_dir() for entry in folder.iterdir()]
        if len(files) <= self.max_entries:
            return
        files.sort(key=lambda entry: entry.stat().st_mtime)
        for entry in files[: len(files) - self.max_entries * 9 // 10]:
            with contextlib.suppress(OSError):
                entry.unlink()


def tracked_by_git(directory: Path) -> bool:
    """Whether git tracks anything in `directory` (a committed cache is contributed data, not ours)."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--", "."], cwd=directory, capture_output=True, text=True, check=False
        )
    except OSError:
        return False
    return listed.returncode == 0 and bool(listed.stdout.strip())


def open_cache(root: Path, enabled: bool = True) -> tuple[VerdictCache | None, str | None]:
    """The verdict cache for a repository and, when it is not used, why. LVEGIT_CACHE_DIR moves it
    (the Action keeps it outside the work tree); LVEGIT_CACHE=read reads without writing (a pull
    request's check), LVEGIT_CACHE=off turns it off."""
    mode = os.environ.get("LVEGIT_CACHE", "on")
    if not enabled or mode == "off":
        return None, None
    directory = Path(os.environ.get("LVEGIT_CACHE_DIR") or root / CACHE_DIR)
    if directory.is_dir() and tracked_by_git(directory):
        return None, f"{directory} is tracked by git, so its verdicts could be forged: not used"
    return VerdictCache(directory, writable=mode != "read"), None
