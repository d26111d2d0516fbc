"""The site's Atom feed (RFC 4287): an entry for each LVE given an id (new in the database) and for each
fix and regression the run history shows, newest first, the latest 200. Written with ElementTree, which
escapes markup; characters XML cannot hold at all (control characters a model's version string may
carry) become U+FFFD first."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final
from urllib.parse import quote

from lvegit.history.status import LVEStatus
from lvegit.lve.ids import Registry

ATOM: Final = "http://www.w3.org/2005/Atom"
MAX_ENTRIES: Final = 200
NOT_XML: Final = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


@dataclass(frozen=True)
class Entry:
    key: str  # what makes its Atom id: never changes for the same event
    title: str
    updated: str  # ISO 8601, UTC
    page: str  # the LVE's page, relative to the site's root
    summary: str


def _xml_text(text: str) -> str:
    return NOT_XML.sub("\ufffd", text)


def feed_entries(
    registry: Registry, statuses: dict[tuple[str, str], LVEStatus], page_of: Callable[[str], str]
) -> list[Entry]:
    """The events, newest first: ids given, and the fix or the regression of each LVE on each model that
    is fixed or regressed now. `page_of`: an LVE path's page on the site."""
    live = registry.live()
    entries = [
        Entry(f"{lve_id}:added", f"{lve_id} added: {entry.path}", f"{entry.since}T00:00:00Z",
              page_of(entry.path), f"{entry.path} entered the database as {lve_id}.")
        for lve_id, entry in registry.ids.items() if entry.retired is None
    ]  # fmt: skip
    for (lve, model), status in statuses.items():
        moment = status.fixed_in if status.state == "fixed" else None
        moment = status.regressed_in if status.state == "regressed" else moment
        if moment is None:
            continue
        name = live.get(lve, lve)
        entries.append(
            Entry(
                f"{name}:{status.state}:{model}:{moment.version}",
                f"{name} {status.state} on {model} in {moment.version}",
                moment.at,
                page_of(lve),
                f"{lve} on {model}: {status.summary}.",
            )
        )
    entries.sort(key=lambda entry: (entry.updated, entry.key), reverse=True)
    return entries[:MAX_ENTRIES]


def atom_feed(title: str, base_url: str | None, entries: list[Entry]) -> bytes:
    """The feed document. Links are absolute with `base_url` (what feed readers need), relative without."""
    root = (base_url or "").rstrip("/") + "/" if base_url else ""
    ET.register_namespace("", ATOM)
    feed = ET.Element(f"{{{ATOM}}}feed")

    def add(parent: ET.Element, tag: str, text: str | None = None, **attributes: str) -> ET.Element:
        element = ET.SubElement(parent, f"{{{ATOM}}}{tag}", attributes)
        if text is not None:
            element.text = _xml_text(text)
        return element

    add(feed, "title", f"{title}: new LVEs, fixes and regressions")
    add(feed, "id", f"{root}feed.xml" if root else f"urn:lvegit:feed:{quote(title)}")
    add(feed, "updated", max((entry.updated for entry in entries), default="1970-01-01T00:00:00Z"))
    add(feed, "link", rel="self", href=f"{root}feed.xml")
    add(feed, "link", rel="alternate", href=f"{root}index.html")
    add(add(feed, "author"), "name", "lvegit")
    for entry in entries:
        item = add(feed, "entry")
        add(item, "title", entry.title)
        add(item, "id", f"urn:lvegit:{quote(entry.key, safe=':')}")
        add(item, "updated", entry.updated)
        add(item, "link", rel="alternate", href=f"{root}{entry.page}")
        add(item, "summary", entry.summary)
    document: bytes = ET.tostring(feed, encoding="utf-8")
    return b'<?xml version="1.0" encoding="utf-8"?>\n' + document
