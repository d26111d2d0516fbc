"""OSV advisories (schema 1.7): one record per LVE that has an id, from its run history and its recorded
instances, and a withdrawn record for each retired id.

OSV names a vulnerability's package by an ecosystem from its closed list, and none of them is "language
model"; and ids take a registered database prefix or the schema's local one, `x_`. So a record's id is
`x_` and the LVE id, each model is an `affected` entry without a package (the model id is in its
`database_specific`), and its model versions are an ECOSYSTEM range: `introduced` where it first
reproduced, `fixed` where the history says it was fixed, `introduced` again where it regressed. Unsafe
recorded instances make their model affected too (the versions that answered them, without a range). The
taxonomy tags, the declared severity and the severity (history/severity.py) go in the record's
`database_specific` (OSV's `severity` holds CVSS vectors only); the LVE's folder and its instances are the
references. `details` is CommonMark to OSV's readers: it goes through escape.rendered_markdown.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

from lvegit.base.escape import console, rendered_markdown
from lvegit.base.files import write_inside
from lvegit.history.severity import impact_of, lve_severity
from lvegit.history.status import LVEStatus
from lvegit.lve.ids import REGISTRY, Entry, Registry, live_ids, load_cached
from lvegit.lve.repo import Repository, repository_url
from lvegit.lve.spec import LVE
from lvegit.publish.export import lve_at

SCHEMA_VERSION: Final = "1.7.0"
LOCAL_PREFIX: Final = "x_"  # the OSV schema's prefix for ids of a database it has not registered


def osv_id(lve_id: str) -> str:
    return LOCAL_PREFIX + lve_id


def _events(status: LVEStatus) -> list[dict[str, str]]:
    """introduced where it first reproduced; fixed and introduced again where a fix that followed a
    reproduction was undone (a regression after a not-affected stretch is its first introduction)."""
    first = status.first_reproduced
    if first is None:
        return []
    events = [{"introduced": first.version}]
    fixed = status.fixed_in
    if fixed is not None and fixed.at > first.at:
        events.append({"fixed": fixed.version})
        if status.state == "regressed" and status.regressed_in is not None:
            events.append({"introduced": status.regressed_in.version})
    return events


def _affected(status: LVEStatus) -> dict[str, Any] | None:
    events = _events(status)
    if not events:  # never reproduced on this model: not affected, nothing to say
        return None
    versions = [status.first_reproduced.version] if status.first_reproduced else []
    for moment in (status.regressed_in, status.last_reproduced):
        if moment is not None and moment.version not in versions:
            versions.append(moment.version)
    specific: dict[str, Any] = {"model": status.model, "state": status.state, "summary": status.summary}
    if status.current is not None:
        specific["current_rate"] = {
            "version": status.current.version,
            "unsafe": status.current.unsafe,
            "attempts": status.current.attempts,
            "interval_95": list(status.current.interval_95),
        }
    ranges = [{"type": "ECOSYSTEM", "events": events}]
    return {"ranges": ranges, "versions": versions, "database_specific": specific}


@dataclass(frozen=True)
class Recorded:
    """What an LVE's recorded instances show of its model (test.json's): how many are unsafe, the model
    versions that answered them unsafely (run_info.model) and when the newest instance was recorded."""

    model: str
    instances: int
    unsafe: int
    versions: tuple[str, ...]
    newest: str | None

    @classmethod
    def of(cls, lve: LVE) -> Recorded:
        lines = [instance for found in lve.recorded() for instance in found.instances]
        unsafe = [instance for instance in lines if instance.passed is False]  # invalid ones are no evidence
        versions = {v for instance in unsafe if (v := _run_info(instance.data, "model")) and v.strip()}
        moments = [moment for instance in lines if (moment := _moment(_run_info(instance.data, "timestamp")))]
        return cls(lve.model, len(lines), len(unsafe), tuple(sorted(versions)), max(moments, default=None))

    def merged_into(self, affected: list[dict[str, Any]]) -> None:
        """Its unsafe instances as evidence on its model: added to the history's entry for that model, or
        an entry of their own (without ranges: which version was the first to answer so is unknown)."""
        if not self.unsafe:
            return
        said = {"unsafe": self.unsafe, "instances": self.instances}
        entry = next((e for e in affected if e["database_specific"]["model"] == self.model), None)
        if entry is None:
            summary = f"{self.unsafe} of {self.instances} recorded instances unsafe"
            entry = {"database_specific": {"model": self.model, "state": "recorded", "summary": summary}}
            affected.append(entry)
        if self.versions:
            known = entry.get("versions", [])
            entry["versions"] = [*known, *(version for version in self.versions if version not in known)]
        entry["database_specific"]["recorded_instances"] = said


def _run_info(data: dict[str, Any], key: str) -> str | None:
    run_info = data.get("run_info")
    value = run_info.get(key) if isinstance(run_info, dict) else None
    return value if isinstance(value, str) else None


def _moment(text: str | None) -> str | None:
    """An instance's recorded time as ISO 8601 UTC, or None when it is no date lvegit can read."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _declared_severity(lve: LVE) -> str | None:
    return next((str(t.get("value")) for t in lve.tags if t.get("name") == "severity"), None)


def osv_record(
    lve_id: str, lve: LVE, statuses: Sequence[LVEStatus], registry: Registry, source: str | None
) -> dict[str, Any]:
    """The OSV record of one LVE, from its run history (`statuses`) and its recorded instances. `source`:
    where the repository is published, for references. Its `modified` is the newest of its own evidence
    (the history's verdicts on it, its instances' recording times) and never earlier than `published`: an
    export with nothing new for it writes the same bytes."""
    since = registry.ids[lve_id].since
    published = f"{since}T00:00:00Z"
    affected = [entry for status in statuses if (entry := _affected(status)) is not None]
    recorded = Recorded.of(lve)
    recorded.merged_into(affected)
    found = lve_severity(statuses, impact_of(lve.impact, lve.tags))
    moments = [published, *(m for m in (found.as_of, recorded.newest) if m)]
    first_line = lve.description.strip().splitlines()[0] if lve.description.strip() else lve.rel
    record: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "id": osv_id(lve_id),
        "modified": max(moments),
        "published": published,
        "summary": console(first_line)[:120],
        "details": rendered_markdown(lve.description),
        "affected": affected,
        "database_specific": {
            "lve_id": lve_id,
            "path": lve.rel,
            "model_in_test_json": lve.model,
            "tags": [{"name": str(t.get("name")), "value": str(t.get("value"))} for t in lve.tags],
            "declared_severity": _declared_severity(lve),
            "severity": found.as_json(),
        },
    }
    if source:
        base = f"{source.rstrip('/').removesuffix('.git')}/tree/main/{quote(lve.rel)}"
        record["references"] = [
            {"type": "WEB", "url": base},
            {"type": "EVIDENCE", "url": f"{base}/instances"},
        ]
    return record


def withdrawn_record(lve_id: str, entry: Entry) -> dict[str, Any]:
    """The record of a retired id: withdrawn on the day its LVE was removed, so that mirrors drop it."""
    retired = f"{entry.retired}T00:00:00Z"
    return {
        "schema_version": SCHEMA_VERSION,
        "id": osv_id(lve_id),
        "modified": retired,
        "published": f"{entry.since}T00:00:00Z",
        "withdrawn": retired,
        "summary": f"Withdrawn: its LVE was removed on {entry.retired}",
        "details": rendered_markdown(
            f"The LVE at {entry.path} was removed from the repository; its id is retired."
        ),
        "affected": [],
        "database_specific": {"lve_id": lve_id, "path": entry.path},
    }


def osv_index(records: Sequence[dict[str, Any]]) -> list[dict[str, str]]:
    """What an OSV mirror lists first (OSV's all.zip / modified-id feed): each id with its `modified`."""
    return [{"id": r["id"], "modified": r["modified"]} for r in sorted(records, key=lambda r: r["id"])]


def write_advisories(base: Path, folder: Path, records: Sequence[dict[str, Any]], base_name: str) -> None:
    """<id>.json for each record and index.json into `folder`, never outside `base` (a folder inside it)."""
    for name, data in [*((f"{r['id']}.json", r) for r in records), ("index.json", osv_index(records))]:
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
        write_inside(base, folder / name, text.encode("utf-8"), base_name)


def advisories(
    repo: Repository, statuses: dict[tuple[str, str], LVEStatus]
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The OSV record of every LVE with an id and a withdrawn one for every retired id (in id order), and
    the LVEs left out, with why. `statuses`: the history's, by (LVE, model)."""
    registry, live = load_cached(repo), live_ids(repo)
    by_lve: dict[str, list[LVEStatus]] = {}
    for (lve_path, _model), status in sorted(statuses.items()):
        by_lve.setdefault(lve_path, []).append(status)
    source = repository_url(repo)
    records, left_out = [], {}
    for path in (repo.relative(lve_dir) for lve_dir in repo.lve_dirs()):
        lve = lve_at(repo, path) if path in live else None
        if path not in live:
            left_out[path] = f"no id yet ({REGISTRY}: lvegit ids assign)"
        elif lve is None:
            left_out[path] = "test.json does not load (lvegit validate says why)"
        else:
            records.append(osv_record(live[path], lve, by_lve.get(path, []), registry, source))
    records += [withdrawn_record(lve_id, e) for lve_id, e in registry.ids.items() if e.retired is not None]
    records.sort(key=lambda record: record["id"])
    return records, left_out
