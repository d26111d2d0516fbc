"""Content-addressed replay verdicts, so that re-checking an unchanged repository builds no checker.

Two kinds of entry. An instance's verdict: its key (lvegit.judge.replay.instance_key) hashes everything that
decides a replayed verdict: lvegit's version, the checker (name, arguments with the instance's parameters
filled in, the source of a custom checker, and for a model-based checker the model and the versions of
the libraries that run it), the prompts as sent and the stored response; the entry holds the verdict, or
the reason the checker gave to skip the instance (model-based and custom checkers only: lvegit's own judge
an instance in less time than its entry takes to key and read). An LVE's whole check (lvegit.judge.check):
its key hashes the LVE's place and every file in its folder, and the checker model; the entry holds the
validation findings and replay results. Outcomes that depend on the machine (a model that is not installed,
an error) are never stored.

Entries are small files under `<dir>/v1/<2 hex>/<key>`: written to a temporary file and renamed, so
concurrent runs never read half an entry; an entry that does not parse is ignored and written again; past
`max_entries` the oldest go. A cache directory that git tracks is refused: a pull request could commit
entries with forged verdicts.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lvegit import __version__
from lvegit.base import settings
from lvegit.base.files import FileProblem, ensure_inside, read_bytes, walk
from lvegit.base.settings import CacheSettings
from lvegit.checkers.model_stack import model_identity, snapshots
from lvegit.checkers.registry import needs_of
from lvegit.lve.repo import TEST_FILE, Repository, named_checker
from lvegit.lve.routing_file import route_problem

CACHE_DIR = ".lvegit-cache"
FORMAT = "v1"
MAX_ENTRIES = 200_000
MAX_ENTRY_BYTES = 64 * 1024 * 1024  # an LVE's whole check: its findings and every instance's result


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


def _folder_files(folder: Path) -> list[Path]:
    """Every entry below a folder that is not a folder (links to folders included, not followed)."""
    return [directory / name for directory, _folders, others in walk(folder) for name in others]


def _test_json(repo: Repository, lve_dir: Path) -> bytes | None:
    """The text of an LVE's test.json as loading reads it (the command's one read of it), when it can be
    read (not a link out, not too large, UTF-8)."""
    try:
        return repo.test_json(lve_dir).encode()
    except FileProblem:
        return None


def _file_digest(path: Path) -> bytes:
    """A regular file's content hash; for anything else (a link, a pipe) only what it is, so that
    hashing never follows a link out of the LVE or blocks on a device."""
    try:
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            return b"link:" + os.readlink(path).encode(errors="surrogateescape")
        if not stat.S_ISREG(info.st_mode):
            return b"special"
        with path.open("rb") as handle:
            return hashlib.file_digest(handle, "sha256").digest()
    except OSError as exc:  # a path too long for the system, say: what went wrong is what it holds
        return f"unreadable:{exc.errno}".encode()


@dataclass
class VerdictCache:
    directory: Path
    writable: bool = True
    max_entries: int = MAX_ENTRIES
    written: int = 0

    @property
    def entries(self) -> Path:
        return self.directory / FORMAT

    def _path(self, key: str) -> Path:
        return self.entries / key[:2] / key

    def _read(self, key: str) -> Any:
        """An entry as written; None for one that is missing, damaged, a link or nested too deep. (The
        readers check every field's type, so no depth limit beyond the parser's own is needed.)"""
        try:
            return json.loads(read_bytes(self._path(key), MAX_ENTRY_BYTES, within=self.directory))
        except (FileProblem, ValueError, RecursionError):
            return None

    def _write(self, key: str, data: Any) -> None:
        if not self.writable:
            return
        path = self._path(key)
        import tempfile  # only a run that writes entries pays for it

        try:
            ensure_inside(self.directory, path.parent, "the cache folder").mkdir(parents=True, exist_ok=True)
            if self.written == 0:
                self._keep_out_of_git()
            descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(descriptor, "w") as handle:
                json.dump(data, handle)
            os.replace(temporary, path)  # atomic: readers see the old entry or the new one
        except (OSError, FileProblem):
            return  # a cache that cannot be written is only slower
        self.written += 1

    def _keep_out_of_git(self) -> None:
        """A `.gitignore` of `*` inside the cache folder: whatever command wrote the cache first, in a
        repository whose .gitignore does not name it, `git add -A` leaves it out. Never over a file or link
        already there (created exclusively)."""
        with (
            contextlib.suppress(FileExistsError),
            open(self.directory / ".gitignore", "x", encoding="utf-8") as handle,
        ):
            handle.write("# lvegit's verdict cache (lvegit writes it): never committed\n*\n")

    def get(self, key: str) -> Outcome | None:
        return Outcome.from_json(self._read(key))

    def put(self, key: str, outcome: Outcome) -> None:
        self._write(key, outcome.as_json())

    def lve_key(self, repo: Repository, lve_dir: Path, strict: bool) -> str:
        """The key of an LVE's whole check (validation and replay): its place, every file in its folder
        (a link by where it points, never followed), and for a model-based checker what it judges with."""
        digest = hashlib.sha256(json.dumps([__version__, "lve", strict]).encode())
        # names may not be UTF-8: their bytes, as the file system holds them
        digest.update(os.fsencode(lve_dir.relative_to(repo.root).as_posix()) + b"\0")
        for path in sorted(_folder_files(lve_dir)):
            digest.update(os.fsencode(path.relative_to(lve_dir).as_posix()) + b"\0")
            if path == lve_dir / TEST_FILE and (test_json := _test_json(repo, lve_dir)) is not None:
                digest.update(hashlib.sha256(test_json).digest() + b"\0")  # the text loading reads
            else:
                digest.update(_file_digest(path) + b"\0")
        named = named_checker(repo, lve_dir)
        digest.update(
            json.dumps(model_identity(*named), sort_keys=True, default=str).encode() if named else b""
        )
        if named is not None and (needs := needs_of(named[0])).judge_argument is not None:
            judge = needs.judge_model(named[1])  # validation asks where its judge goes
            digest.update(str(route_problem(repo.root, judge) if judge is not None else None).encode())
        return digest.hexdigest()

    def machine_stamp(self, lve: str) -> str:
        """What an outcome of the LVE's checker that depends on this machine (a skip for a package or a
        hub model it lacks) depends on, so that a change to any of it decides the outcome again: the
        installed distributions (the folders Python imports from, by modification time: installing or
        removing one changes its folder), the hub cache's copies of the models the LVE's checker asked
        for, and the environment that says where models are."""
        models = {model: _cached_revisions(model) for model in self.hub_models(lve)}
        checkers = settings.current().checkers
        stamp = [
            _import_folders(),
            models,
            {name: os.environ.get(name) for name in MODEL_ENVIRONMENT},
            [checkers.allow_downloads, checkers.spacy_model],
        ]
        return hashlib.sha256(json.dumps(stamp, sort_keys=True).encode()).hexdigest()

    @staticmethod
    def machine_key(key: str, stamp: str) -> str:
        """The key of an outcome (`key`: an instance's or an LVE's) that holds while `stamp` does."""
        return hashlib.sha256(f"{key}\0{stamp}".encode()).hexdigest()

    def get_lve(self, key: str) -> dict[str, Any] | None:
        data = self._read(key)
        return data if isinstance(data, dict) and data.get("kind") == "lve" else None

    def put_lve(self, key: str, data: dict[str, Any]) -> None:
        self._write(key, {"kind": "lve", **data})

    def put_hub_models(self, lve: str, models: list[str]) -> None:
        """The hub models the LVE's custom checker asked for when it last ran (for lvegit models)."""
        self._write(_hub_models_key(lve), {"kind": "hub-models", "models": models})

    def hub_models(self, lve: str) -> list[str]:
        data = self._read(_hub_models_key(lve))
        models = data.get("models") if isinstance(data, dict) and data.get("kind") == "hub-models" else None
        return [m for m in models if isinstance(m, str)] if isinstance(models, list) else []

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


MODEL_ENVIRONMENT = (
    "HF_HOME",
    "HF_HUB_CACHE",
    "HF_HUB_OFFLINE",
    "XDG_CACHE_HOME",
)


@functools.cache
def _import_folders() -> list[tuple[str, int]]:
    """The folders this interpreter imports from, with their modification times (once per process)."""
    here = os.getcwd()
    found = [sys.executable]
    found += [path for path in sys.path if path and os.path.abspath(path) != here and os.path.isdir(path)]
    return [(path, os.stat(path).st_mtime_ns) for path in found]


def _cached_revisions(model: str) -> list[str]:
    """The revisions of a hub model that the local hub cache holds."""
    found = snapshots(model)
    return sorted(entry.name for entry in found.iterdir()) if found.is_dir() else []


def _hub_models_key(lve: str) -> str:
    return hashlib.sha256(f"hub-models\0{lve}".encode()).hexdigest()


def open_cache(
    root: Path, settings: CacheSettings, enabled: bool = True
) -> tuple[VerdictCache | None, str | None]:
    """The verdict cache for a repository and, when it is not used, why. Its settings may move it (the
    Action keeps it outside the work tree), make it read-only (a pull request's check) or turn it off."""
    if not enabled or settings.mode == "off":
        return None, None
    directory = Path(settings.directory or root / CACHE_DIR)
    # A link (committed in place of the folder, say) would lead reads and writes wherever it points.
    if directory.is_symlink():
        return None, f"{directory} is a link, so its verdicts could be forged elsewhere: not used"
    from lvegit.git.vcs import tracked  # here: a check without the cache (--no-cache) asks git nothing

    if directory.exists() and tracked(directory):
        return None, f"{directory} is tracked by git, so its verdicts could be forged: not used"
    return VerdictCache(directory, writable=settings.mode != "read"), None
