"""Stable LVE ids (`LVE-2026-0042`): given once an LVE lands on the default branch, never reused, kept
across moves and renames, and never set by a pull request.

The registry is `lve-ids.json` at the repository root: each id with the LVE's path, the day it was given,
and the day it was retired when its LVE went away (a retired id is never given again). Only `lvegit ids
assign` writes it, run by a trusted workflow after a merge (examples/workflows/lvegit-ids.yml); a pull
request that changes it fails its check. `assign` follows an LVE that moved with git's rename detection on
its test.json since the registry was last written, retires the ids of LVEs that are gone, and gives each new
LVE the next number of the year, in path order.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from lvegit.base.errors import UsageError
from lvegit.base.files import FileProblem, read_text, write_inside
from lvegit.lve.repo import Repository

REGISTRY: Final = "lve-ids.json"
SCHEMA: Final = "lvegit-ids"
ID: Final = re.compile(r"LVE-(\d{4})-(\d{4,6})")
MAX_REGISTRY_BYTES: Final = 16 * 1024 * 1024


@dataclass
class Entry:
    path: str
    since: str
    retired: str | None = None


@dataclass
class Registry:
    ids: dict[str, Entry] = field(default_factory=dict)

    def live(self) -> dict[str, str]:
        """Each LVE path that has an id, with it."""
        return {entry.path: lve_id for lve_id, entry in self.ids.items() if entry.retired is None}

    def next_id(self, year: int) -> str:
        """The next number of `year`: one past every id of that year ever given, retired ones too."""
        numbers = [
            int(m.group(2)) for lve_id in self.ids if (m := ID.fullmatch(lve_id)) and int(m.group(1)) == year
        ]
        return f"LVE-{year}-{max(numbers, default=0) + 1:04d}"

    def as_json(self) -> dict[str, Any]:
        entries = {}
        for lve_id, entry in sorted(self.ids.items()):
            entries[lve_id] = {"path": entry.path, "since": entry.since}
            if entry.retired is not None:
                entries[lve_id]["retired"] = entry.retired
        return {"schema": SCHEMA, "version": 1, "ids": entries}


def _problem(message: str) -> UsageError:
    return UsageError(f"{REGISTRY}: {message}")


def parse(text: str) -> Registry:
    """The registry in `text`; a UsageError names what makes it none (an id twice on one path, a malformed
    id or entry)."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise _problem(f"not JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or not isinstance(data.get("ids"), dict):
        raise _problem(f"not an {SCHEMA} document")
    registry = Registry()
    for lve_id, entry in data["ids"].items():
        if not ID.fullmatch(lve_id):
            raise _problem(f"'{lve_id[:40]}' is not an id such as LVE-2026-0042")
        if (
            not isinstance(entry, dict)
            or not isinstance(entry.get("path"), str)
            or not isinstance(entry.get("since"), str)
        ):
            raise _problem(f"{lve_id}: needs a path and the day it was given (since)")
        retired = entry.get("retired")
        registry.ids[lve_id] = Entry(
            entry["path"], entry["since"], retired if isinstance(retired, str) else None
        )
    live: dict[str, str] = {}
    for lve_id, entry in registry.ids.items():
        if entry.retired is None and entry.path in live:
            raise _problem(f"{entry.path} has two ids, {live[entry.path]} and {lve_id}")
        if entry.retired is None:
            live[entry.path] = lve_id
    return registry


def load(repo: Repository) -> Registry:
    """The repository's registry as its work tree holds it (none yet: an empty one)."""
    path = repo.root / REGISTRY
    if not os.path.lexists(path):
        return Registry()
    try:
        return parse(read_text(path, MAX_REGISTRY_BYTES, within=repo.root, base_name="the repository"))
    except FileProblem as exc:
        raise _problem(str(exc)) from None


@dataclass(frozen=True)
class _Read:
    registry: Registry
    live: dict[str, str]  # its live() map, worked out once: commands ask it for each of 10,000s of LVEs


def _read_once(repo: Repository) -> _Read:
    cached = repo.loaded.get(Path(REGISTRY))
    if not isinstance(cached, _Read):
        registry = load(repo)
        cached = repo.loaded[Path(REGISTRY)] = _Read(registry, registry.live())
    return cached


def load_cached(repo: Repository) -> Registry:
    """The registry, read once per repository object (not to be changed: `assign` works on `load`'s)."""
    return _read_once(repo).registry


def live_ids(repo: Repository) -> dict[str, str]:
    """Each LVE path that has an id, with it: the registry's live() map, worked out once per repository."""
    return _read_once(repo).live


def id_of(repo: Repository, lve_dir: Path) -> str | None:
    return live_ids(repo).get(repo.relative(lve_dir))


def resolve_ids(repo: Repository, arguments: list[Path]) -> list[Path]:
    """Path arguments with each id (`LVE-2026-0042`) replaced by its LVE's folder."""
    if not any(ID.fullmatch(str(argument)) for argument in arguments):
        return arguments
    registry = load_cached(repo)
    resolved = []
    for argument in arguments:
        lve_id = str(argument)
        if not ID.fullmatch(lve_id):
            resolved.append(argument)
            continue
        entry = registry.ids.get(lve_id)
        if entry is None:
            raise UsageError(f"{lve_id}: no LVE has this id ({REGISTRY} lists the ids given)")
        if entry.retired is not None:
            raise UsageError(f"{lve_id}: its LVE ({entry.path}) was removed on {entry.retired}")
        resolved.append(repo.root / entry.path)
    return resolved


@dataclass
class Assigned:
    given: dict[str, str] = field(default_factory=dict)  # id -> path
    moved: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (old path, new path)
    retired: dict[str, str] = field(default_factory=dict)  # id -> path
    left_out: dict[str, str] = field(default_factory=dict)  # path -> why it gets no id yet


def assign(
    repo: Repository,
    renames: dict[str, str],
    today: str | None = None,
    waiting: Callable[[str], str | None] = lambda _path: None,
) -> tuple[Registry, Assigned]:
    """The registry after this commit: moved LVEs keep their ids (`renames`: old LVE path -> new, from git),
    LVEs that are gone retire theirs, new LVEs get the next ones, in path order; `waiting` says why a new
    LVE gets none yet (not committed, a draft), or None."""
    day = today or datetime.now(UTC).strftime("%Y-%m-%d")
    registry, done = load(repo), Assigned()
    present = [repo.relative(lve_dir) for lve_dir in repo.lve_dirs()]
    live = registry.live()
    for path, lve_id in sorted(live.items()):
        if path in present:
            continue
        target = renames.get(path)
        if target in present and target not in registry.live():
            registry.ids[lve_id].path = target
            done.moved[lve_id] = (path, target)
        else:
            registry.ids[lve_id].retired = day
            done.retired[lve_id] = path
    with_id = registry.live()
    for path in sorted(p for p in present if p not in with_id):
        why = waiting(path)
        if why is not None:
            done.left_out[path] = why
            continue
        lve_id = registry.next_id(int(day[:4]))
        registry.ids[lve_id] = Entry(path, day)
        done.given[lve_id] = path
    return registry, done


def write(repo: Repository, registry: Registry) -> None:
    text = json.dumps(registry.as_json(), indent=2) + "\n"
    try:
        write_inside(repo.root, repo.root / REGISTRY, text.encode("utf-8"))
    except FileProblem as exc:
        raise _problem(str(exc)) from None
