"""The site's events, for its Atom feed (RFC 4287) and its "what changed" page: each LVE added (given an id)
and retired, and each event of the run history (history/events.py: reproduced on a model, fixed,
regressed), newest first. An event, once in the history, stays: a later run adds entries and never
changes or removes one (the feed keeps the newest MAX_ENTRIES, as feeds do).

An entry's id is its anchor on the site's changes page under `--base-url`, else under the repository's URL
(`.lverepo`): never shared by two sites or repositories, never changed by a rebuild. Written with
ElementTree, which escapes markup; text went through base/escape.py first (control and bidi characters
shown as escapes), and characters XML cannot hold at all become U+FFFD."""

from __future__ import annotations

import hashlib
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal
from urllib.parse import quote

from lvegit.base.escape import shown_text
from lvegit.history.events import Event
from lvegit.history.severity import Severity
from lvegit.lve.ids import Registry

ATOM: Final = "http://www.w3.org/2005/Atom"
XML_BASE: Final = "{http://www.w3.org/XML/1998/namespace}base"
MAX_ENTRIES: Final = 200  # in the feed
CHANGES_PAGE: Final = "changes.html"
CHANGES_SHOWN: Final = 200  # on the changes page
NOT_XML: Final = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")

Kind = Literal["added", "reproduced", "fixed", "regressed", "retired"]


@dataclass(frozen=True)
class Entry:
    key: str  # what makes its id and anchor: the same event always has the same key
    kind: Kind
    name: str  # the LVE's id, or its path while it has none
    title: str
    updated: str  # ISO 8601, UTC
    page: str  # relative to the site's root: the LVE's page, or this entry on the changes page
    summary: str

    @property
    def anchor(self) -> str:
        return anchor(self.key)


def anchor(key: str) -> str:
    """An entry's id on the changes page: its key with what HTML ids and URL fragments keep readable, and a
    hash of the whole key (two keys may read alike)."""
    readable = re.sub(r"[^A-Za-z0-9._-]+", "-", key).strip("-")
    return f"event-{readable}-{hashlib.sha256(key.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"


@dataclass(frozen=True)
class About:
    """What an entry's summary says of its LVE."""

    description: str
    severity: Severity | None


def _what(lve_id: str | None, path: str, about: About | None) -> str:
    """`LVE-2026-0005 (3.9 low): Multiplies two numbers wrongly.`: id, severity, description."""
    severity = about.severity if about else None
    known = severity is not None and severity.level != "unknown"
    shown = f"severity {severity.score:.1f} {severity.level}" if severity and known else "severity unknown"
    description = about.description if about else "no longer in the repository"
    return f"{lve_id or path} ({shown}): {description}"


def feed_entries(
    registry: Registry,
    events: Sequence[Event],
    about: Mapping[str, About],
    page_of: Callable[[str], str | None],
) -> list[Entry]:
    """Every entry, newest first. `about`: what the site knows of each LVE by path (its description and
    severity); `page_of`: an LVE path's page on the site, None for an LVE without one."""
    names: dict[str, str] = {}
    for lve_id, entry in sorted(registry.ids.items(), key=lambda item: item[1].retired is None):
        names[entry.path] = lve_id  # a live id over a retired one of the same path
    entries: list[Entry] = []

    def add(key: str, kind: Kind, path: str, title: str, updated: str, what: str) -> None:
        page = page_of(path) or f"{CHANGES_PAGE}#{anchor(key)}"
        summary = f"{what} {_what(names.get(path), path, about.get(path))}"
        entries.append(Entry(key, kind, names.get(path, path), title, updated, page, summary))

    for lve_id, entry in registry.ids.items():
        added = f"Added on {entry.since} as {entry.path}."
        add(
            f"{lve_id}:added",
            "added",
            entry.path,
            f"{lve_id} added: {entry.path}",
            f"{entry.since}T00:00:00Z",
            added,
        )
        if entry.retired is not None:
            retired = f"Retired on {entry.retired}: it left the repository."
            title = f"{lve_id} retired: {entry.path}"
            add(f"{lve_id}:retired", "retired", entry.path, title, f"{entry.retired}T00:00:00Z", retired)
    for event in events:
        name = names.get(event.lve, event.lve)  # its id once given (ids stay across moves), its path before
        key = f"{name}:{event.kind}:{event.model}:{event.run.at}"
        title = {
            "reproduced": f"{name} reproduced on {event.model} ({event.run.version})",
            "fixed": f"{name} fixed on {event.model} in {event.version}",
            "regressed": f"{name} regressed on {event.model} in {event.version}",
        }[event.kind]
        since = f" after it was fixed in {event.fix.version} ({event.fix.at[:10]})" if event.fix else ""
        fixed_on = event.fix.at[:10] if event.fix else ""
        what = {
            "reproduced": f"First reproduced on {event.model} in the run of {event.run.at[:10]}.",
            "fixed": f"Fixed on {event.model} since {event.version} ({fixed_on}), as the run of "
            f"{event.run.at[:10]} showed.",
            "regressed": f"Reproduced again on {event.model} in the run of {event.run.at[:10]}{since}.",
        }[event.kind]
        add(key, event.kind, event.lve, title, event.run.at, what)
    entries.sort(key=lambda entry: (entry.updated, entry.key), reverse=True)
    return entries


def _xml_text(text: str) -> str:
    return NOT_XML.sub("\ufffd", shown_text(text))


def atom_feed(title: str, base_url: str | None, repository: str | None, entries: list[Entry]) -> bytes:
    """The feed document: its newest MAX_ENTRIES entries. Links are absolute under `base_url` (what feed
    readers need; `xml:base` says it too), relative without. `repository`: the repository's https URL, what
    ids are made from without a base URL."""
    root = base_url.rstrip("/") + "/" if base_url else ""
    ids = f"{root}{CHANGES_PAGE}" if root else repository
    ET.register_namespace("", ATOM)
    feed = ET.Element(f"{{{ATOM}}}feed", {XML_BASE: root} if root else {})

    def add(parent: ET.Element, tag: str, text: str | None = None, **attributes: str) -> ET.Element:
        element = ET.SubElement(parent, f"{{{ATOM}}}{tag}", attributes)
        if text is not None:
            element.text = _xml_text(text)
        return element

    add(feed, "title", f"{title}: LVEs added, reproduced, fixed, regressed and retired")
    add(
        feed,
        "id",
        f"{root}feed.xml"
        if root
        else f"{repository}#feed"
        if repository
        else f"urn:lvegit:feed:{quote(title)}",
    )
    add(feed, "updated", max((entry.updated for entry in entries), default="1970-01-01T00:00:00Z"))
    add(feed, "link", rel="self", href=f"{root}feed.xml")
    add(feed, "link", rel="alternate", href=f"{root}{CHANGES_PAGE}")
    add(add(feed, "author"), "name", "lvegit")
    for entry in entries[:MAX_ENTRIES]:
        item = add(feed, "entry")
        add(item, "title", entry.title)
        add(item, "id", f"{ids}#{entry.anchor}" if ids else f"urn:lvegit:{quote(entry.key, safe=':')}")
        add(item, "updated", entry.updated)
        add(item, "link", rel="alternate", href=f"{root}{entry.page}")
        add(item, "category", term=entry.kind)
        add(item, "summary", entry.summary)
    document: bytes = ET.tostring(feed, encoding="utf-8")
    return b'<?xml version="1.0" encoding="utf-8"?>\n' + document
