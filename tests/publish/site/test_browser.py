"""The site in a real browser: Debian's headless Chromium, driven by Selenium through Debian's chromedriver
(no browser or driver is downloaded). Pages are opened from disk (file://), as a reader of a built site
would. Screenshots of the home page and of an LVE page go to test-artifacts/."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from builders import PROJECT_ROOT, RepoBuilder, hostile_repository

BUNDLED = len(list((PROJECT_ROOT / "repository").rglob("test.json")))  # the bundled LVEs

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
ARTIFACTS = Path(os.environ.get("LVEGIT_TEST_ARTIFACTS", PROJECT_ROOT / "test-artifacts"))

MISSING = (
    "the browser tests need Debian's chromium and chromium-driver (the README's test command installs them "
    "with apt-get; it could not here)"
    if CHROMIUM is None or CHROMEDRIVER is None
    else None
)
# Locally a missing browser skips these tests; in CI (CI=true) it fails them: CI never skips them.
pytestmark = pytest.mark.skipif(MISSING is not None and not os.environ.get("CI"), reason=str(MISSING))


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if MISSING is not None:
        pytest.fail(MISSING)
    from selenium import webdriver

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,1000"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=CHROMEDRIVER))
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


def open_page(browser: Any, path: Path) -> list[dict[str, Any]]:
    """Load `path` from disk; the console messages it logged that are errors."""
    browser.get_log("browser")  # drop what earlier pages logged
    browser.get(path.as_uri())
    browser.find_element("css selector", "main")
    return [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]


def build(cli: Any, out: Path, repo_root: Path) -> Path:
    assert cli("site", str(out), "--repo", str(repo_root)).code == 0
    return out


def test_every_page_loads_from_disk_without_a_console_error(browser: Any, cli: Any, tmp_path: Path) -> None:
    out = build(cli, tmp_path / "site", PROJECT_ROOT)
    pages = sorted(out.rglob("*.html"))
    assert len(pages) == 3 + 6 + BUNDLED  # home, status (history/), changes, categories, LVEs
    for page in pages:
        assert open_page(browser, page) == [], page.name
        assert browser.find_element("css selector", "h1").text
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    open_page(browser, out / "index.html")
    browser.save_screenshot(str(ARTIFACTS / "site-home.png"))
    open_page(browser, next((out / "lves").glob("reliability-consistency-capital-city-*.html")))
    browser.save_screenshot(str(ARTIFACTS / "site-lve.png"))


def test_the_status_pages_show_the_bundled_history(browser: Any, cli: Any, tmp_path: Path) -> None:
    """The bundled history (history/) has an LVE fixed in demo-assistant-v2 and one regressed in it: the
    status page says so in words and marks, and the LVE's page draws its timeline."""
    out = build(cli, tmp_path / "site", PROJECT_ROOT)
    assert open_page(browser, out / "status.html") == []
    cells = {
        row.find_element("css selector", "th").text: row.find_element("css selector", "td").text
        for row in browser.find_elements("css selector", "table.status tbody tr")
    }
    letters = "repository/reliability/strings/letter_count/openai--gpt-4o-mini"
    multiply = "repository/reliability/arithmetic/multiply/openai--gpt-4o-mini"
    severities = {
        row.find_element("css selector", "th").text: row.find_element("css selector", "td.severity").text
        for row in browser.find_elements("css selector", "table.status tbody tr")
    }
    assert (severities[multiply], severities[letters]) == ("3.9 low", "0.0 none")  # its tag says low impact
    assert cells[letters] == "✓ fixed in demo-assistant-v2 (2026-09-28)"
    assert cells[multiply] == "▲ regressed in demo-assistant-v2 (2026-09-28)"
    browser.save_screenshot(str(ARTIFACTS / "site-status.png"))
    browser.find_element("link text", multiply).click()
    chart = browser.find_element("css selector", "svg.timeline")
    assert chart.is_displayed() and chart.size["width"] > 300
    # a dot per run: every run on the rate's line (hollow), the reproducing ones again, filled
    line = browser.find_element("css selector", "svg.timeline polyline.rate")
    reproduced = browser.find_element("css selector", "svg.timeline polyline.reproduced")
    assert len(line.get_attribute("points").split()) == 6
    assert len(reproduced.get_attribute("points").split()) == 3
    marker = browser.execute_script("return getComputedStyle(arguments[0]).markerMid", line)
    assert marker == 'url("#run-clean")'
    rows = [row.text for row in browser.find_elements("css selector", "table.runs tbody tr")]
    assert rows == [
        "demo-assistant-v1 3 2026-09-07 2026-09-21 0/150 0",
        "demo-assistant-v2 3 2026-09-28 2026-10-12 150/150 0",
    ]
    assert "demo-assistant-v2" in browser.find_element("css selector", "svg.timeline").text
    browser.execute_script("document.getElementById('status').scrollIntoView()")
    browser.save_screenshot(str(ARTIFACTS / "site-timeline.png"))


def shown_ids(browser: Any) -> list[str]:
    """The ids of the LVE table's rows on screen, in their order."""
    rows = browser.find_elements("css selector", "#lve-table tbody tr")
    return [row.find_element("css selector", "td.id").text for row in rows if row.is_displayed()]


def test_the_filters_change_what_is_shown(browser: Any, cli: Any, tmp_path: Path) -> None:
    from selenium.webdriver.support.ui import Select

    out = build(cli, tmp_path / "site", PROJECT_ROOT)
    open_page(browser, out / "index.html")
    count = browser.find_element("id", "lve-table-count")
    assert (
        len(shown_ids(browser)) == BUNDLED and count.text == f"{BUNDLED} LVEs"
    )  # the script ran: the filters are visible
    affects = Select(browser.find_element("css selector", "[data-filter=affects]"))
    affects.select_by_visible_text(
        "demo/assistant"
    )  # the history: multiply regressed, capital city reproduces
    assert (
        shown_ids(browser) == ["LVE-2026-0005", "LVE-2026-0006"]
        and count.text == f"2 of {BUNDLED} LVEs shown"
    )
    affects.select_by_visible_text("meta/llama-3-8b-instruct")  # unsafe instances recorded on it
    Select(browser.find_element("css selector", "[data-filter=verdict]")).select_by_value("unsafe")
    assert count.text == f"3 of {BUNDLED} LVEs shown"
    affects.select_by_value("")
    Select(browser.find_element("css selector", "[data-filter=verdict]")).select_by_value("")
    taxonomy = Select(browser.find_element("css selector", "[data-filter=taxonomy]"))
    taxonomy.select_by_value("owasp-llm:2025:llm01")
    tagged = shown_ids(browser)
    assert count.text == f"5 of {BUNDLED} LVEs shown"  # the prompt injections and jailbreaks
    taxonomy.select_by_value("atlas:aml.t0051")  # the technique: the LVEs of both of its sub-techniques
    assert count.text == f"3 of {BUNDLED} LVEs shown"
    taxonomy.select_by_value("")
    search = browser.find_element("css selector", "[data-filter=text]")
    search.send_keys("LLM01")  # a taxonomy id: the LVEs tagged with it
    assert shown_ids(browser) == tagged
    search.clear()
    search.send_keys("prompt injection")  # its name finds them too (and the LVEs that say it)
    assert set(tagged) <= set(shown_ids(browser))
    search.clear()
    search.send_keys("LVE-2026-0005")
    assert shown_ids(browser) == ["LVE-2026-0005"]
    search.clear()
    search.send_keys("capital")
    assert len(shown_ids(browser)) == 1 and count.text == f"1 of {BUNDLED} LVEs shown"
    search.clear()
    search.send_keys("x")  # clear() sends no input event; typing does
    search.send_keys("\b")
    assert len(shown_ids(browser)) == BUNDLED


def test_the_model_filter_follows_the_evidence_not_test_json(browser: Any, cli: Any, tmp_path: Path) -> None:
    """Which LVEs affect acme/chat: one written for another model that the history reproduces there, one
    whose unsafe instance was recorded there; not one written for it and recorded unsafe there that the
    history has since seen fixed, nor one written for it with only safe instances."""
    from selenium.webdriver.support.ui import Select

    from builders import GitRepo, history_run, instance

    git = GitRepo(tmp_path / "lves")
    builder = RepoBuilder(git.root)
    recorded = {**instance("3", False, a=1, b=2), "run_info": {"model": "acme/chat"}}
    builder.lve(
        "c/elsewhere", {"model": "meta/llama"}, instances={"i.jsonl": [instance("3", True, a=1, b=2)]}
    )
    builder.lve("c/recorded", {"model": "meta/llama"}, instances={"i.jsonl": [recorded]})
    builder.lve("c/fixed", {"model": "acme/chat"}, instances={"i.jsonl": [recorded]})
    builder.lve("c/safe", {"model": "acme/chat"}, instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    git.commit("four LVEs")
    assert cli("ids", "assign", "--today", "2026-11-01", cwd=git.root).code == 0
    lve = "repository/c/{}/openai--gpt-4o-mini"
    history_run(
        git.root / "history",
        "2026-10-01T03:00:00Z",
        {
            (lve.format("elsewhere"), "acme/chat", "v1"): (2, 8),
            (lve.format("fixed"), "acme/chat", "v1"): (1, 9),
        },
    )
    history_run(
        git.root / "history", "2026-10-08T03:00:00Z", {(lve.format("fixed"), "acme/chat", "v1"): (0, 80)}
    )
    out = build(cli, tmp_path / "site", git.root)
    assert open_page(browser, out / "index.html") == []
    Select(browser.find_element("css selector", "[data-filter=affects]")).select_by_visible_text("acme/chat")
    paths = [
        row.find_element("css selector", "td.lve a").text
        for row in browser.find_elements("css selector", "#lve-table tbody tr")
        if row.is_displayed()
    ]
    assert [path.split("/")[2] for path in paths] == ["elsewhere", "recorded"]


def test_the_lve_table_sorts_by_id_and_severity(browser: Any, cli: Any, tmp_path: Path) -> None:
    """The id and severity columns say how severe each LVE is; a click on a header sorts by it, a second
    click the other way. The severity is the status page's number."""
    out = build(cli, tmp_path / "site", PROJECT_ROOT)
    assert open_page(browser, out / "index.html") == []
    headers = {header.text: header for header in browser.find_elements("css selector", "#lve-table thead th")}
    headers["Severity"].find_element("css selector", "button").click()
    assert headers["Severity"].get_attribute("aria-sort") == "ascending"
    headers["Severity"].find_element("css selector", "button").click()
    assert headers["Severity"].get_attribute("aria-sort") == "descending"
    rows = browser.find_elements("css selector", "#lve-table tbody tr")
    first = [
        (row.find_element("css selector", "td.id").text, row.find_elements("css selector", "td")[3].text)
        for row in rows[:3]
    ]
    assert first == [
        ("LVE-2026-0005", "3.9 low"),
        ("LVE-2026-0006", "3.3 low"),
        ("LVE-2026-0009", "0.0 none"),
    ]
    for row in rows:  # the advisory's number, or none where the advisory has none
        lve_id = row.find_element("css selector", "td.id").text
        record = json.loads((out / "osv" / f"x_{lve_id}.json").read_text())["database_specific"]["severity"]
        known = record["level"] != "unknown"
        shown = row.find_elements("css selector", "td")[3].text
        assert shown == (f"{record['score']:.1f} {record['level']}" if known else "none yet"), lve_id
    headers["Id"].find_element("css selector", "button").click()
    assert shown_ids(browser) == sorted(shown_ids(browser)) and shown_ids(browser)[0] == "LVE-2026-0001"
    headers["Id"].find_element("css selector", "button").click()
    assert shown_ids(browser)[0] == f"LVE-2026-{BUNDLED:04d}"
    open_page(browser, out / "status.html")
    severities = {
        row.find_element("css selector", "th").text: row.find_element("css selector", "td.severity").text
        for row in browser.find_elements("css selector", "table.status tbody tr")
    }
    assert severities["repository/reliability/arithmetic/multiply/openai--gpt-4o-mini"] == "3.9 low"


def test_a_hostile_repositorys_script_never_runs(
    browser: Any, cli: Any, repo: RepoBuilder, tmp_path: Path
) -> None:
    from selenium.common.exceptions import NoAlertPresentException

    hostile_repository(repo)
    out = build(cli, tmp_path / "site", repo.root)
    for page in sorted(out.rglob("*.html")):
        open_page(browser, page)
        assert "pwned" not in browser.title, page.name
        with pytest.raises(NoAlertPresentException):
            browser.switch_to.alert.text  # noqa: B018  # reading it is what raises when there is none
    assert "<script>" in browser.find_element("css selector", "main").text  # shown as text


PHONE = {
    "width": 390,
    "height": 844,
    "deviceScaleFactor": 1,
    "mobile": True,
}  # a phone, as Chromium emulates it


def test_no_page_scrolls_sideways_on_a_phone(browser: Any, cli: Any, tmp_path: Path) -> None:
    """At 390 px (a phone) no page is wider than the screen: tables scroll inside their own boxes, paths
    wrap; the status page's status column starts on screen, the timeline's labels stay readable (once
    5 px tall), and the legend says what the cells say."""
    out = build(cli, tmp_path / "site", PROJECT_ROOT)
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", PHONE)
    try:
        for page in sorted(out.rglob("*.html")):
            assert open_page(browser, page) == [], page.name
            width = browser.execute_script("return document.documentElement.scrollWidth")
            assert width <= PHONE["width"], (page.relative_to(out).as_posix(), width)
        open_page(browser, out / "status.html")
        first_status = browser.find_element("css selector", "table.status tbody td")
        assert first_status.rect["x"] < PHONE["width"] - 60  # on screen, with room for its words
        legend = browser.find_element("css selector", ".legend").text
        assert "never run" in legend and "never-run" not in legend
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(ARTIFACTS / "site-phone-status.png"))
        open_page(browser, next((out / "lves").glob("reliability-arithmetic-multiply-*.html")))
        label = browser.find_element("css selector", "svg.timeline text")
        assert label.rect["height"] >= 9, label.rect
        chart = browser.find_element("css selector", "svg.timeline").rect  # all of it on screen
        assert chart["x"] >= 0 and chart["x"] + chart["width"] <= PHONE["width"] and chart["width"] > 300
        browser.save_screenshot(str(ARTIFACTS / "site-phone-lve.png"))
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_an_lves_page_links_its_id_to_its_advisory_and_every_page_to_the_feed(
    browser: Any, cli: Any, tmp_path: Path
) -> None:
    """The bundled repository's ids (lve-ids.json): the LVE's page shows its id and opens its OSV record; the
    footer opens the advisory index and the Atom feed, which a feed reader finds from the page's head."""
    out = build(cli, tmp_path / "site", PROJECT_ROOT)
    assert open_page(browser, next((out / "lves").glob("reliability-arithmetic-multiply-*.html"))) == []
    assert browser.find_element("css selector", "code.lve-id").text == "LVE-2026-0005"
    assert browser.find_element("css selector", "p.severity").text.startswith(
        "Severity: 3.9 low (exploitability 7.8 (1 model, 1 vendor, unsafe rate at least 97%"
    )
    feed = browser.find_element("css selector", "link[rel=alternate][type='application/atom+xml']")
    assert feed.get_attribute("href") == (out / "feed.xml").as_uri()
    browser.find_element("link text", "OSV advisory").click()
    record = json.loads(browser.find_element("tag name", "pre").text)
    assert record["id"] == "x_LVE-2026-0005" and record["database_specific"]["severity"]["score"] == 3.9
    browser.back()
    browser.find_element("link text", "OSV advisories").click()
    assert {"id": "x_LVE-2026-0005", "modified": "2026-11-26T00:00:00Z"} in json.loads(
        browser.find_element("tag name", "pre").text
    )
    browser.back()
    browser.find_element("link text", "Feed of what changed").click()
    titles = browser.execute_script(
        "return Array.from(document.getElementsByTagName('entry')).map(e => e.getElementsByTagName('title')[0].textContent)"
    )
    assert "LVE-2026-0005 regressed on demo/assistant in demo-assistant-v2" in titles
    assert "LVE-2026-0009 fixed on demo/assistant in demo-assistant-v2" in titles
    assert "LVE-2026-0006 reproduced on demo/assistant (demo-assistant-v1)" in titles
    assert len(titles) == BUNDLED + 4  # every bundled LVE given an id; 2 reproduced, a fix, a regression


# Every word of a table cell on one line, except where a word may break: after a path's or a model id's
# slash, after a hyphen between letters. Numbers, dates, ratios and ids never break. Responses (<pre>) and
# collapsed details are left out: they wrap as text does.
BROKEN_WORDS = """
const broken = [];
for (const cell of document.querySelectorAll("table th, table td")) {
  const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.parentElement.closest("pre, details, svg")) continue;
    for (const match of node.data.matchAll(/\\S+/g)) {
      const word = match[0];
      const whole = !/[a-z]/i.test(word) || /^\\(?LVE-\\d/.test(word);
      let offset = match.index;
      for (const piece of whole ? [word] : word.split(/(?<=[\\/-])/)) {
        const range = document.createRange();
        range.setStart(node, offset);
        range.setEnd(node, offset + piece.length);
        const lines = new Set(Array.from(range.getClientRects()).filter((r) => r.width > 0).map((r) => Math.round(r.bottom)));
        if (lines.size > 1) broken.push(piece);
        offset += piece.length;
      }
    }
  }
}
return broken;
"""


@pytest.mark.parametrize("width", [390, 1280])
def test_table_cells_never_break_a_word_or_a_number(
    browser: Any, cli: Any, tmp_path: Path, width: int
) -> None:
    """At a phone's width and a laptop's, no table cell breaks a word letter by letter ("saf e",
    "Categ ory") or a number across lines: measured in the browser, word by word."""
    out = build(cli, tmp_path / "site", PROJECT_ROOT)
    pages = [
        out / "index.html",
        out / "status.html",
        out / "changes.html",
        next((out / "categories").glob("security-*.html")),
        *sorted((out / "lves").glob("*.html")),
    ]
    browser.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {**PHONE, "width": width, "mobile": width < 800}
    )
    try:
        for page in pages:
            assert open_page(browser, page) == [], page.name
            assert browser.execute_script(BROKEN_WORDS) == [], (page.name, width)
            assert browser.find_elements("css selector", "table") or page.name == "changes.html"
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_what_changed_is_one_click_from_every_page(browser: Any, cli: Any, tmp_path: Path) -> None:
    """Every page's navigation opens the changes page, newest first (the bundled ids were given after the
    history's runs), whose entries open their LVE's page; the feed and the advisories are in the same
    navigation."""
    out = build(cli, tmp_path / "site", PROJECT_ROOT)
    assert open_page(browser, next((out / "categories").glob("security-*.html"))) == []
    nav = browser.find_element("css selector", "header nav")
    assert [link.text for link in nav.find_elements("css selector", "a")][1:] == [
        "LVEs", "Status by model", "What changed", "Feed", "OSV advisories"
    ]  # fmt: skip
    nav.find_element("link text", "What changed").click()
    entries = browser.find_elements("css selector", "ol.changes li")
    kinds = [entry.find_element("css selector", ".kind").text for entry in entries]
    assert kinds == ["added"] * BUNDLED + ["fixed", "regressed", "reproduced", "reproduced"]
    first = entries[BUNDLED].find_element("css selector", "a")
    assert first.text == "LVE-2026-0009 fixed on demo/assistant in demo-assistant-v2"
    first.click()
    assert browser.find_element("css selector", "code.lve-id").text == "LVE-2026-0009"
