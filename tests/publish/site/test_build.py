"""`lvegit site`: the pages, their links, their escaping and their determinism (no browser here)."""

from __future__ import annotations

import hashlib
import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from builders import (
    PROJECT_ROOT,
    SAMPLES,
    SECRETS,
    RepoBuilder,
    hostile_repository,
    instance,
    plant_code,
    public_format,
    recorded_calls,
    recording,
)

BUNDLED = len(list((PROJECT_ROOT / "repository").rglob("test.json")))  # the bundled LVEs


def tree_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


class Tags(HTMLParser):
    """Every start tag of a page with its attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def tags_of(path: Path) -> list[tuple[str, dict[str, str | None]]]:
    parser = Tags()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser.tags


def test_the_bundled_repository_builds_with_working_relative_links(cli: Any, tmp_path: Path) -> None:
    out = tmp_path / "site"
    result = cli("site", str(out), "--repo", str(PROJECT_ROOT))
    assert result.code == 0, result.err
    assert result.out.splitlines() == [
        f"{BUNDLED} LVE pages and 6 category pages in {out}",
        f"status by model from 6 runs of the run history: {out / 'status.html'}",
        f"open {out / 'index.html'}",
    ]
    pages = sorted(out.rglob("*.html"))
    assert len(pages) == 3 + 6 + BUNDLED  # the home, status and changes pages, categories, LVEs
    [judged] = [page for page in pages if "paraphrased-instructions" in page.name]
    assert "<details><summary>judged by a model</summary><pre>openai/gpt-4o: unsafe</pre></details>" in (
        judged.read_text()
    )
    index = (out / "index.html").read_text()
    assert '<code>owasp-llm:2025:LLM06</code><br><span class="description">Excessive Agency</span>' in index
    assert "<code>atlas:AML.T0051</code>" in index  # the technique above its sub-techniques' tags
    [agent] = [page for page in pages if "page-send-email" in page.name]
    text = agent.read_text()
    assert "<dt>Tools</dt>" in text and "<code>send_email</code>: Send an e-mail" in text
    assert "at most 4 tool steps per turn" in text
    assert (
        "calls <code>fetch_page({&#34;url&#34;: &#34;https://recipes.example/sourdough&#34;})</code>" in text
    )
    assert '<span class="role">tool (call_page)</span>' in text
    assert "calls send_email(" in text  # the recorded turn, as readers see it
    for page in pages:
        for tag, attrs in tags_of(page):
            for name in ("href", "src"):
                target = attrs.get(name)
                external = tag == "a" and target is not None and target.startswith(("http://", "https://"))
                if target is None or target.startswith("#") or external:
                    continue
                assert not re.match(r"^[a-z]+:|^//|^/", target), f"{page.name}: {target} is not relative"
                resolved = (page.parent / target.split("#")[0]).resolve()
                assert resolved.is_file(), f"{page.name}: {target} leads nowhere"
        scripts = [attrs.get("src") for tag, attrs in tags_of(page) if tag == "script"]
        assert len(scripts) == 1 and str(scripts[0]).endswith("assets/site.js")


def crawl(start: Path) -> tuple[set[Path], list[str]]:
    """Follow every local link (href, src) from `start`: the pages reached, and each link whose file is not
    there or whose #fragment is no id of its page."""
    ids: dict[Path, set[str]] = {}

    def ids_of(page: Path) -> set[str]:
        if page not in ids:
            ids[page] = {str(attrs["id"]) for _tag, attrs in tags_of(page) if attrs.get("id")}
        return ids[page]

    seen, queue, broken = {start}, [start], []
    while queue:
        page = queue.pop()
        for _tag, attrs in tags_of(page):
            for target in (attrs.get("href"), attrs.get("src")):
                if target is None or re.match(r"^[a-z]+:", target):
                    continue  # an external link (the crawl is of the site's own files)
                path, _, fragment = target.partition("#")
                resolved = (page.parent / path).resolve() if path else page
                if not resolved.is_file():
                    broken.append(f"{page.name}: {target}")
                elif resolved.suffix == ".html":
                    if fragment and fragment not in ids_of(resolved):
                        broken.append(f"{page.name}: {target} (no such anchor)")
                    if resolved not in seen:
                        seen.add(resolved)
                        queue.append(resolved)
    return seen, broken


def test_a_crawl_of_the_bundled_site_finds_no_broken_local_link(cli: Any, tmp_path: Path) -> None:
    """From the home page every page is reached, and every local link leads to a file and, with a
    #fragment, to an element of that id: the status page links an LVE's #status only where its page has
    one (never-run LVEs have none), the changes page's entries and the feed's links land too."""
    out = tmp_path / "site"
    assert cli("site", str(out), "--repo", str(PROJECT_ROOT)).code == 0
    reached, broken = crawl(out / "index.html")
    assert broken == []
    assert reached == {page.resolve() for page in out.rglob("*.html")}
    status_links = [str(attrs["href"]) for tag, attrs in tags_of(out / "status.html") if tag == "a"]
    assert sum(link.endswith("#status") for link in status_links) == 3  # the LVEs the history ran
    import xml.etree.ElementTree as ET

    feed = ET.parse(out / "feed.xml").getroot()
    for link in feed.iter("{http://www.w3.org/2005/Atom}link"):
        path, _, fragment = str(link.get("href")).partition("#")
        assert (out / path).is_file() and (not fragment or f'id="{fragment}"' in (out / path).read_text())


PUBLIC_FORMAT = [("own", None)] + ([("samples", SAMPLES)] if SAMPLES.is_dir() else [])


@pytest.mark.parametrize(("kind", "root"), PUBLIC_FORMAT, ids=[kind for kind, _root in PUBLIC_FORMAT])
def test_lves_in_the_public_repositorys_format_build(
    cli: Any, tmp_path: Path, kind: str, root: Path | None
) -> None:
    """LVEs as the public repository holds them (prompt files, multi-run prompts, lve-tools instances):
    this project's own (public_format), and the real samples as well where they are beside the checkout."""
    root = root or public_format(tmp_path / "lves")
    out = tmp_path / "site"
    result = cli("site", str(out), "--repo", str(root))
    pages = {"own": "2 LVE pages and 2 category pages", "samples": "5 LVE pages and 3 category pages"}[kind]
    assert (result.code, result.out.splitlines()[0]) == (0, f"{pages} in {out}")
    text = next((out / "lves").glob("privacy-pii-leakage-celebrity-addresses-*.html")).read_text()
    assert '<mark class="parameter" title="a parameter, filled from each instance">{person}</mark>' in text
    assert "3 instances: 1 safe, 2 unsafe" in text


def test_a_draft_of_lvegit_new_is_left_out_and_named(repo: RepoBuilder, cli: Any, tmp_path: Path) -> None:
    """After `lvegit new`, the site once published the draft with its placeholders."""
    repo.lve(instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    assert cli("new", "cat/draft", "--model", "openai/gpt-4o", "--no-interactive", cwd=repo.root).code == 0
    result = cli("site", str(tmp_path / "site"), cwd=repo.root)
    assert result.code == 0
    assert result.out.splitlines()[0] == (
        f"1 LVE page and 1 category page in {tmp_path / 'site'}; 1 LVE left out (a draft, or test.json does "
        "not load: lvegit validate says why): repository/cat/draft/openai--gpt-4o"
    )
    assert "please fill in" not in "".join(p.read_text() for p in (tmp_path / "site").rglob("*.html"))


def test_the_same_repository_gives_the_same_bytes(cli: Any, tmp_path: Path) -> None:
    digests = set()
    for name in ("one", "two", "one"):  # a rebuild into a used folder too
        assert cli("site", str(tmp_path / name), "--repo", str(PROJECT_ROOT), "--title", "LVEs").code == 0
        digests.add(tree_digest(tmp_path / name))
    assert len(digests) == 1


def test_hostile_content_stays_text(repo: RepoBuilder, cli: Any, tmp_path: Path) -> None:
    hostile_repository(repo)
    out = tmp_path / "site"
    assert cli("site", str(out), cwd=repo.root).code == 0
    for page in out.rglob("*.html"):
        text = page.read_bytes().decode("utf-8")  # valid UTF-8: the lone surrogate's line is left out
        tags = tags_of(page)
        assert [tag for tag, _ in tags if tag in ("img", "iframe", "object", "embed")] == []
        assert [attrs["src"] for tag, attrs in tags if tag == "script"] == [
            f"{'../' * ('/' in page.relative_to(out).as_posix())}assets/site.js"
        ]
        assert not any(name.startswith("on") for _, attrs in tags for name in attrs)
        assert not any(str(attrs.get("href", "")).startswith("javascript:") for _, attrs in tags)
        assert "Content-Security-Policy" in text and "script-src 'self'" in text
    lve_page = next((out / "lves").glob("evil-markup-*.html"))
    text = lve_page.read_text()
    assert "&lt;script&gt;document.title=&#34;pwned&#34;&lt;/script&gt;" in text
    assert "image: javascript:alert(1)</span>" in text  # shown, not a link
    assert "\ud800" not in text


def test_run_reports_add_live_reproduction_rates(
    repo: RepoBuilder, cli: Any, adding: Any, tmp_path: Path
) -> None:
    repo.lve(instances={"i.jsonl": [instance("3", True, a=1, b=2), instance("100", False, a=99, b=1)]})
    assert cli("run", "--all", "--repeat", "3", "--report", "r.jsonl", cwd=repo.root).code in (0, 1)
    out = tmp_path / "site"
    assert cli("site", str(out), "--reports", str(repo.root / "r.jsonl"), cwd=repo.root).code == 0
    text = next((out / "lves").glob("dummy-add-*.html")).read_text()
    assert "2 instances re-run" in text
    assert "<td>0/3 unsafe (95% CI 0%-56%)</td>" in text
    assert "<td>3/3 unsafe (95% CI 44%-100%)</td>" in text  # the model still gets 99 + 1 wrong


def test_bad_options_are_usage_errors(repo: RepoBuilder, cli: Any, tmp_path: Path) -> None:
    repo.lve()
    bad_url = cli("site", str(tmp_path / "s"), "--base-url", "javascript:alert(1)", cwd=repo.root)
    assert (bad_url.code, bad_url.err) == (
        2,
        "lvegit: error: --base-url must be an http(s) URL, not 'javascript:alert(1)'\n",
    )
    (tmp_path / "file").write_text("x")
    not_a_folder = cli("site", str(tmp_path / "file"), cwd=repo.root)
    assert not_a_folder.code == 2 and "is a file" in not_a_folder.err
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "assets").mkdir()  # a folder of someone's: a site build would replace it
    not_ours = cli("site", str(tmp_path / "mine"), cwd=repo.root)
    assert not_ours.code == 2 and "is not empty and holds no site written by lvegit site" in not_ours.err
    assert (tmp_path / "mine" / "assets").is_dir()
    published = cli("site", str(tmp_path / "s"), "--base-url", "https://org.example/lves/", cwd=repo.root)
    assert published.code == 0
    assert (
        '<link rel="canonical" href="https://org.example/lves/index.html">'
        in (tmp_path / "s/index.html").read_text()
    )


def test_without_the_data_extra_the_site_is_built_without_the_history(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bare install (no pyarrow, no DuckDB) builds the site of a repository that has a run history: its
    pages, without the history's, and a note that says what to install."""
    import sys

    from lvegit.base.extras import install_command

    for name in ("pyarrow", "pyarrow.parquet", "duckdb"):
        monkeypatch.setitem(sys.modules, name, None)  # `import name` raises ImportError
    out = tmp_path / "site"
    result = cli("site", str(out), "--repo", str(PROJECT_ROOT))
    assert result.code == 0, result.err
    assert (
        f"the run history needs pyarrow: {install_command('data')}; the site is built without" in result.err
    )
    assert not (out / "status.html").exists() and (out / "index.html").is_file()


def test_the_feed_and_advisories_hold_what_a_model_server_named_itself(cli: Any, tmp_path: Path) -> None:
    """A version string is whatever the model's server said: markup in it reaches the feed as text (an XML
    parser reads the feed back), control characters as visible escapes (in the feed and the advisories) and
    the advisories as JSON the OSV schema takes."""
    import json
    import xml.etree.ElementTree as ET

    from builders import GitRepo, history_run, reference_schema_accepts

    git = GitRepo(tmp_path / "lves")
    RepoBuilder(git.root).lve("cat/x", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    assert cli("ids", "assign", "--today", "2026-11-26", cwd=git.root).code == 0
    lve, hostile = "repository/cat/x/openai--gpt-4o-mini", "v2</title><script>x</script>\x01\x1b[31m"
    history_run(git.root / "history", "2026-09-01T03:00:00Z", {(lve, "acme/chat", "v1"): (0, 80)})
    history_run(git.root / "history", "2026-09-08T03:00:00Z", {(lve, "acme/chat", hostile): (2, 0)})
    out = tmp_path / "site"
    assert cli("site", str(out), "--repo", str(git.root), "--base-url", "https://lves.example/").code == 0

    atom = "{http://www.w3.org/2005/Atom}"
    feed = ET.parse(out / "feed.xml").getroot()
    titles = [entry.findtext(f"{atom}title") for entry in feed.iter(f"{atom}entry")]
    assert titles == [
        "LVE-2026-0001 added: repository/cat/x/openai--gpt-4o-mini",
        "LVE-2026-0001 regressed on acme/chat in v2</title><script>x</script>\\x01\\x1b[31m",
    ]
    links = [link.get("href") for link in feed.iter(f"{atom}link")]
    assert links[0] == "https://lves.example/feed.xml" and all(
        h.startswith("https://lves.example/") for h in links
    )
    record = json.loads((out / "osv" / "x_LVE-2026-0001.json").read_text())
    shown = "v2</title><script>x</script>\\x01\\x1b[31m"  # the site's advisories show what its pages do
    assert record["affected"][0]["ranges"][0]["events"] == [{"introduced": shown}]
    assert json.loads((out / "osv" / "index.json").read_text()) == [
        {"id": "x_LVE-2026-0001", "modified": "2026-11-26T00:00:00Z"}
    ]
    reference_schema_accepts(record, "osv-schema.json")
    # The LVE's page writes its timeline without autoescaping (200,000 charts): the version is escaped
    # where it is written: the status in words, the current rate, the first and last reproduction, the
    # chart's label and the table of versions (the last two showed its control characters as they were).
    (page,) = (out / "lves").glob("*.html")
    text = page.read_text()
    assert "<script>x" not in text and "\x1b" not in text
    assert text.count("v2&lt;/title&gt;&lt;script&gt;x&lt;/script&gt;\\x01\\x1b[31m") == 6


def test_bidi_and_control_characters_are_shown_as_escapes(
    repo: RepoBuilder, cli: Any, tmp_path: Path
) -> None:
    """A right-to-left override makes a line read otherwise than it is, an ESC sequence restyles a reader's
    terminal: on every page and in the feed they are visible escapes (base/escape.py's shown_text); line
    breaks in a response stay."""
    from builders import GitRepo

    trick = "refund \u202eslobmys\u202c ok\x1b[31m\u2066x\u2069\x07"
    repo = RepoBuilder(GitRepo(tmp_path / "lves").root)
    repo.lve(
        "cat/trick",
        {"description": trick, "tags": [{"name": "note", "value": trick}]},
        instances={"i.jsonl": [{**instance(f"line one\n{trick}", False, a=1, b=2), "author": trick}]},
    )
    assert cli("ids", "assign", "--today", "2026-11-26", cwd=repo.root).code == 0
    out = tmp_path / "site"
    assert cli("site", str(out), cwd=repo.root).code == 0
    shown = "refund \\u202eslobmys\\u202c ok\\x1b[31m\\u2066x\\u2069\\x07"
    for path in [*out.rglob("*.html"), out / "feed.xml"]:
        text = path.read_text(encoding="utf-8")
        assert not any(char in text for char in "\u202e\u202c\u2066\u2069\x1b\x07"), path.name
    page = next((out / "lves").glob("cat-trick-*.html")).read_text()
    assert page.count(shown) >= 4  # description, tag, response, author
    assert f"line one\n{shown}" in page
    assert shown in (out / "feed.xml").read_text() and shown in (out / "changes.html").read_text()


def test_bidi_characters_of_the_run_history_are_shown_as_escapes_on_every_page(
    cli: Any, tmp_path: Path
) -> None:
    """A model's name and version come from a run history that a pull request may commit: in the model
    filter, the tables' headers and cells, an LVE's page, the feed and the advisories, their bidi and
    control characters are visible escapes, as every other text's are."""
    from builders import GitRepo, history_run

    git = GitRepo(tmp_path / "lves")
    RepoBuilder(git.root).lve("cat/x", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    assert cli("ids", "assign", "--today", "2026-11-26", cwd=git.root).code == 0
    lve = "repository/cat/x/openai--gpt-4o-mini"
    raw_model, raw_version = "acme/\u202eledom\u202c\u2066x\u2069", "v\u202e2\x1b[31m\u200f"
    model, version = "acme/\\u202eledom\\u202c\\u2066x\\u2069", "v\\u202e2\\x1b[31m\\u200f"  # as shown
    history_run(git.root / "history", "2026-09-01T03:00:00Z", {(lve, raw_model, "v1"): (0, 80)})
    history_run(git.root / "history", "2026-09-08T03:00:00Z", {(lve, raw_model, raw_version): (2, 0)})
    out = tmp_path / "site"
    assert cli("site", str(out), "--repo", str(git.root)).code == 0
    for path in [*out.rglob("*.html"), out / "feed.xml", *out.rglob("*.json")]:
        text = path.read_text(encoding="utf-8")
        assert not any(char in text for char in "\u202e\u202c\u2066\u2069\u200f\x1b"), path.name
    index, status = (out / "index.html").read_text(), (out / "status.html").read_text()
    assert f'<option value="{model.lower()}">{model}</option>' in index  # the model filter
    assert f'data-affects="{model.lower()}"' in index and model in status
    page = next((out / "lves").glob("*.html")).read_text()
    assert f"<dd>{model}" in page and version in page  # Affects, and the status on the model


def test_the_processes_writing_pages_run_lvegits_code_with_no_secret(
    repo: RepoBuilder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The LVE pages of a large repository are written by processes of their own (here one per LVE):
    each imports lvegit, not the `lvegit/` folder or `sitecustomize.py` at the repository's root, and
    gets none of lvegit's secrets."""
    from lvegit.lve.repo import Repository
    from lvegit.publish.site import build

    for name in ("a/one", "b/two", "c/three"):
        repo.lve(name, instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    marker = plant_code(repo.root)
    log = recording(tmp_path / "bin", "python", sys.executable)
    monkeypatch.setattr(build, "LVES_PER_BATCH", 1)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "bin" / "python"))
    monkeypatch.chdir(repo.root)
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    site = build.build(Repository(repo.root.resolve()), tmp_path / "site", "LVEs", [], None)
    assert [row.rel for row in site.rows] == [
        f"repository/{n}/openai--gpt-4o-mini" for n in ("a/one", "b/two", "c/three")
    ]
    assert not marker.exists()
    calls = recorded_calls(log)
    assert calls and all(call["args"][:3] == ["-I", "-m", "lvegit.publish.site.pages"] for call in calls)
    assert all(call["cwd"] == "/" for call in calls)
    assert not any(set(SECRETS) & set(call["env"]) for call in calls)
