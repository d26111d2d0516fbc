"""The site's feed (feed.xml) and its "what changed" page: events added by a run, never removed by a later
one; ids that are unique and stable; summaries that say what the LVE is. Read back with an XML parser in
Atom's namespace."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from builders import GitRepo, RepoBuilder, history_run, instance

ATOM = "{http://www.w3.org/2005/Atom}"
XML_BASE = "{http://www.w3.org/XML/1998/namespace}base"
A, B, C = (f"repository/cat/{name}/openai--gpt-4o-mini" for name in ("a", "b", "c"))


def entries(site: Path) -> dict[str, dict[str, Any]]:
    """The feed's entries by id: title, summary, link, category."""
    feed = ET.parse(site / "feed.xml").getroot()
    found: dict[str, dict[str, Any]] = {}
    for entry in feed.iter(f"{ATOM}entry"):
        entry_id = entry.findtext(f"{ATOM}id")
        assert entry_id is not None and entry_id not in found, entry_id  # unique
        link = entry.find(f"{ATOM}link")
        category = entry.find(f"{ATOM}category")
        found[entry_id] = {
            "title": entry.findtext(f"{ATOM}title"),
            "summary": entry.findtext(f"{ATOM}summary"),
            "link": link.get("href") if link is not None else None,
            "kind": category.get("term") if category is not None else None,
        }
    return found


def same_event(one: dict[str, Any], other: dict[str, Any]) -> bool:
    return (one["title"], one["kind"]) == (other["title"], other["kind"])


def repository(tmp_path: Path, cli: Any) -> GitRepo:
    """Three LVEs with ids; a history in which A reproduced on acme/chat, B reproduced and has some clean
    runs since (not yet enough to count as fixed), C reproduced and was fixed."""
    git = GitRepo(tmp_path / "lves")
    builder = RepoBuilder(git.root)
    for name, description in (("a", "Adds wrongly"), ("b", "Counts wrongly"), ("c", "Rounds wrongly")):
        builder.lve(
            f"cat/{name}",
            {"description": description},
            instances={"i.jsonl": [instance("3", True, a=1, b=2)]},
        )
    git.commit("three LVEs")
    assert cli("ids", "assign", "--today", "2026-09-01", cwd=git.root).code == 0
    git.commit("ids")
    history = git.root / "history"
    history_run(history, "2026-09-01T03:00:00Z", {(lve, "acme/chat", "v1"): (3, 7) for lve in (A, B, C)})
    history_run(
        history, "2026-09-08T03:00:00Z", {(B, "acme/chat", "v1"): (0, 40), (C, "acme/chat", "v1"): (0, 80)}
    )
    return git


def test_a_run_adds_exactly_its_events_and_removes_none(tmp_path: Path, cli: Any) -> None:
    """A run in which A reproduces on a new model, B is fixed and C regresses adds those three entries and
    keeps every earlier one (C's fix among them); a run that changes nothing adds none."""
    git = repository(tmp_path, cli)
    site = tmp_path / "site"
    build = ("site", str(site), "--repo", str(git.root), "--base-url", "https://lves.example/")
    assert cli(*build).code == 0
    before = entries(site)
    assert sorted(entry["title"] for entry in before.values()) == [
        "LVE-2026-0001 added: " + A,
        "LVE-2026-0001 reproduced on acme/chat (v1)",
        "LVE-2026-0002 added: " + B,
        "LVE-2026-0002 reproduced on acme/chat (v1)",
        "LVE-2026-0003 added: " + C,
        "LVE-2026-0003 fixed on acme/chat in v1",
        "LVE-2026-0003 reproduced on acme/chat (v1)",
    ]
    history = git.root / "history"
    history_run(
        history,
        "2026-09-15T03:00:00Z",
        {(A, "other/model", "w1"): (2, 8), (B, "acme/chat", "v2"): (0, 40), (C, "acme/chat", "v2"): (1, 9)},
    )
    assert cli(*build).code == 0
    after = entries(site)
    # none removed, none changed (a summary gives the LVE's severity now: that may change)
    assert set(before) <= set(after) and all(same_event(after[key], before[key]) for key in before)
    added = sorted(entry["title"] for key, entry in after.items() if key not in before)
    assert added == [
        "LVE-2026-0001 reproduced on other/model (w1)",
        "LVE-2026-0002 fixed on acme/chat in v1",
        "LVE-2026-0003 regressed on acme/chat in v2",
    ]
    history_run(
        history, "2026-09-22T03:00:00Z", {(A, "acme/chat", "v1"): (1, 9), (B, "acme/chat", "v2"): (0, 0)}
    )
    assert cli(*build).code == 0
    assert entries(site).keys() == after.keys()  # a reproduction that was already known, a run of errors


def test_ids_summaries_and_links_say_which_site_and_which_lve(tmp_path: Path, cli: Any) -> None:
    """Ids are anchors of the site's changes page (under --base-url) or of the repository (its .lverepo):
    two sites titled alike never share one. A summary gives the id, the severity and the description; each
    entry links the LVE's page, which the changes page lists with the same anchor."""
    git = repository(tmp_path, cli)
    site = tmp_path / "site"
    assert cli("site", str(site), "--repo", str(git.root), "--base-url", "https://lves.example/").code == 0
    feed = ET.parse(site / "feed.xml").getroot()
    assert feed.get(XML_BASE) == "https://lves.example/"
    assert feed.findtext(f"{ATOM}id") == "https://lves.example/feed.xml"
    found = entries(site)
    changes = (site / "changes.html").read_text()
    for entry_id, entry in found.items():
        page, _, anchor = entry_id.partition("#")
        assert page == "https://lves.example/changes.html" and f'id="{anchor}"' in changes
        assert entry["link"].startswith("https://lves.example/lves/")
        assert (site / entry["link"].removeprefix("https://lves.example/")).is_file()
    [fixed] = [entry for entry in found.values() if entry["kind"] == "fixed"]
    assert fixed["summary"] == (
        "Fixed on acme/chat since v1 (2026-09-08), as the run of 2026-09-08 showed. "
        "LVE-2026-0003 (severity 0.0 none): Rounds wrongly"
    )
    [reproduced] = [
        entry for entry in found.values() if entry["title"].startswith("LVE-2026-0001 reproduced")
    ]
    assert "LVE-2026-0001 (severity" in reproduced["summary"] and reproduced["summary"].endswith(
        "Adds wrongly"
    )
    other = tmp_path / "other"
    assert cli("site", str(other), "--repo", str(git.root)).code == 0  # no base URL: the repository's
    without_base = entries(other)
    assert all(key.startswith("https://example.invalid/lves.git#event-") for key in without_base)
    assert ET.parse(other / "feed.xml").getroot().get(XML_BASE) is None
    assert {key.partition("#")[2] for key in without_base} == {key.partition("#")[2] for key in found}


def test_a_retired_lve_keeps_its_entries_and_gains_a_retired_one(tmp_path: Path, cli: Any) -> None:
    git = repository(tmp_path, cli)
    site = tmp_path / "site"
    assert cli("site", str(site), "--repo", str(git.root)).code == 0
    before = entries(site)
    git.git("rm", "-rq", "repository/cat/c")
    git.commit("C goes")
    assert cli("ids", "assign", "--today", "2026-10-01", cwd=git.root).code == 0
    assert cli("site", str(site), "--repo", str(git.root)).code == 0
    after = entries(site)
    assert all(same_event(after[key], before[key]) for key in before)
    [retired] = [entry for key, entry in after.items() if key not in before]
    assert retired["title"] == f"LVE-2026-0003 retired: {C}" and retired["kind"] == "retired"
    assert "LVE-2026-0003 (severity unknown): no longer in the repository" in retired["summary"]
    for entry in after.values():  # C has no page now: its entries lead to the changes page
        target, _, anchor = entry["link"].partition("#")
        assert (site / target).is_file() and (not anchor or f'id="{anchor}"' in (site / target).read_text())
