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


def test_the_filters_change_what_is_shown(browser: Any, cli: Any, tmp_path: Path) -> None:
    from selenium.webdriver.support.ui import Select

    out = build(cli, tmp_path / "site", PROJECT_ROOT)
    open_page(browser, out / "index.html")

    def shown() -> list[str]:
        rows = browser.find_elements("css selector", "#lve-table tbody tr")
        return [row.get_attribute("data-model") for row in rows if row.is_displayed()]

    count = browser.find_element("id", "lve-table-count")
    assert (
        len(shown()) == BUNDLED and count.text == f"{BUNDLED} LVEs"
    )  # the script ran: the filters are visible
    Select(browser.find_element("css selector", "[data-filter=model]")).select_by_value(
        "meta/llama-3-8b-instruct"
    )
    assert shown() == ["meta/llama-3-8b-instruct"] * 5 and count.text == f"5 of {BUNDLED} LVEs shown"
    Select(browser.find_element("css selector", "[data-filter=verdict]")).select_by_value("safe")
    assert shown() == ["meta/llama-3-8b-instruct"] and count.text == f"1 of {BUNDLED} LVEs shown"
    Select(browser.find_element("css selector", "[data-filter=model]")).select_by_value("")
    Select(browser.find_element("css selector", "[data-filter=verdict]")).select_by_value("")
    taxonomy = Select(browser.find_element("css selector", "[data-filter=taxonomy]"))
    taxonomy.select_by_value("owasp-llm:2025:llm01")
    assert count.text == f"4 of {BUNDLED} LVEs shown"  # the prompt injections and jailbreaks
    taxonomy.select_by_value("atlas:aml.t0051")  # the technique: both of its sub-techniques' LVEs
    assert count.text == f"2 of {BUNDLED} LVEs shown"
    taxonomy.select_by_value("")
    search = browser.find_element("css selector", "[data-filter=text]")
    search.send_keys("capital")
    assert len(shown()) == 1 and count.text == f"1 of {BUNDLED} LVEs shown"
    search.clear()
    search.send_keys("x")  # clear() sends no input event; typing does
    search.send_keys("\b")
    assert len(shown()) == BUNDLED


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
