"""The site's pages from the repository's LVEs (and, given run reports, their live reproduction rates).

Everything an LVE or a model wrote reaches the pages through Jinja2's autoescaping; strings are made valid
Unicode first (a lone surrogate from a JSON escape becomes U+FFFD), URLs become links only when they are
http(s), and every page carries a Content-Security-Policy that allows the site's own script and stylesheet
and nothing else. The output is deterministic: the same repository gives the same bytes.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import shutil
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from lvegit.base.errors import MissingExtra, UsageError
from lvegit.base.files import FileProblem, output_folder, write_inside
from lvegit.base.output import count, note
from lvegit.history.severity import Severity, from_status, severities, severity
from lvegit.history.status import STATE_MARKS, History, LVEStatus, State
from lvegit.judge.results import judge_said, unsafe_rate
from lvegit.lve.ids import live_ids, load_cached
from lvegit.lve.prompt import Message, response_text
from lvegit.lve.repo import Repository
from lvegit.lve.spec import LVE, load_lve
from lvegit.lve.taxonomy import SCHEMES
from lvegit.lve.taxonomy import name_of as taxonomy_name
from lvegit.lve.template import SHOWN_PARAMETER
from lvegit.run.rerun import InstanceResult, by_instance

if TYPE_CHECKING:
    from markupsafe import Markup

    from lvegit.publish.site.timeline import Timeline

INSTANCES_SHOWN = 100  # instances in the open on an LVE page; the rest in collapsed groups of this size
LVES_PER_BATCH = 500  # LVE pages a worker process writes at a time (a smaller repository: no workers)
ASSETS = ("site.css", "site.js")
MARKER = ".lvegit-site"  # in a folder lvegit site wrote: a rebuild may replace its pages


def clean(text: str) -> str:
    """Valid Unicode: lone surrogates (from JSON escapes such as \\ud800) become U+FFFD."""
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def slug(path: str) -> str:
    """A file name for `path`: readable, short, unique (a hash of the whole path), safe on every system."""
    readable = re.sub(r"[^a-z0-9]+", "-", path.lower()).strip("-")[:60] or "lve"
    return f"{readable}-{hashlib.sha256(path.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"


def http_url(value: str | None) -> str | None:
    """The URL when it is an http(s) one (then it may be a link), else None (shown as text only)."""
    if not value:
        return None
    parts = urlsplit(value.strip())
    return value.strip() if parts.scheme in ("http", "https") and parts.netloc else None


def _text(value: Any) -> str:
    return clean(response_text(value))


def _percent(part: int, whole: int) -> str:
    return f"{round(100 * part / whole)}%" if whole else "-"


@dataclass(frozen=True)
class Segment:
    text: str
    parameter: bool  # a {placeholder} to fill


@dataclass(frozen=True)
class ShownMessage:
    role: str
    segments: list[Segment]  # empty for the model's turn
    hole: bool
    variable: str | None
    image_url: str | None  # as written, shown as text
    image_link: str | None  # the same, when it may be a link
    calls: list[str] = field(default_factory=list)  # an assistant's tool calls, as `name(arguments)`
    answers: str | None = None  # the call a tool message answers


@dataclass(frozen=True)
class ShownRun:
    title: str | None
    messages: list[ShownMessage]


@dataclass(frozen=True)
class ShownInstance:
    file: str
    line: int
    parameters: str
    model_args: str
    response: str
    judged: str | None  # what an LLM judge answered
    passed: bool
    author: str
    date: str
    live: str | None  # the live reproduction, from run reports


@dataclass(frozen=True)
class ShownStatus:
    """The LVE on one model of the run history: its status and its timeline."""

    status: LVEStatus
    timeline: Timeline

    @property
    def said(self) -> Markup:
        """The status in words (its mark first), escaped: a status page has 200,000 of them."""
        return state_html(self.status)

    @property
    def details(self) -> Markup:
        """Its current rate, first and last reproduction and failed attempts, in words, escaped."""
        from markupsafe import Markup, escape

        status, parts = self.status, []
        if status.current is not None:
            low, high = status.current.interval_95
            parts.append(
                f"now {status.current.unsafe}/{status.current.attempts} unsafe (95% interval "
                f"{100 * low:.1f}% to {100 * high:.1f}%) on {escape(clean(status.current.version))}"
            )
        if status.first_reproduced and status.last_reproduced:
            first, last = status.first_reproduced, status.last_reproduced
            parts.append(
                f"first reproduced {first.at[:10]} ({escape(clean(first.version))}), "
                f"last {last.at[:10]} ({escape(clean(last.version))})"
            )
        if status.failed:
            parts.append(f"{count(status.failed, 'attempt')} failed")
        return Markup("; ".join(parts))


@functools.cache  # statuses recur: the same summary on many LVEs
def _state_words(state: State, summary: str) -> Markup:
    from markupsafe import Markup, escape

    return Markup(f"{STATE_MARKS[state]} ") + escape(clean(summary))


def state_html(status: LVEStatus) -> Markup:
    return _state_words(status.state, status.summary)


@dataclass
class LVEPage:
    lve: LVE
    slug: str
    category_slug: str
    instances: list[ShownInstance] = field(default_factory=list)
    runs: list[ShownRun] = field(default_factory=list)
    problems: int = 0  # lines of its instance files that do not load
    statuses: list[ShownStatus] = field(default_factory=list)  # from the run history, by model
    lve_id: str | None = None  # its stable id, once given
    severity: Severity | None = None  # from the run history's evidence, once some run gave a verdict

    @property
    def safe(self) -> int:
        return sum(i.passed for i in self.instances)

    @property
    def unsafe(self) -> int:
        return len(self.instances) - self.safe

    @property
    def live(self) -> str | None:
        shown = [i.live for i in self.instances if i.live]
        return f"{len(shown)} instances re-run" if shown else None

    def instance_groups(self) -> list[tuple[int, int, list[ShownInstance]]]:
        """The instances in groups of INSTANCES_SHOWN: (first number, last number, the instances)."""
        return [
            (
                start + 1,
                min(start + INSTANCES_SHOWN, len(self.instances)),
                self.instances[start : start + INSTANCES_SHOWN],
            )
            for start in range(0, len(self.instances), INSTANCES_SHOWN)
        ]


def _segments(text: str) -> list[Segment]:
    segments, start = [], 0
    for match in SHOWN_PARAMETER.finditer(text):
        if match.start() > start:
            segments.append(Segment(clean(text[start : match.start()]), False))
        segments.append(Segment(clean(match.group()), True))
        start = match.end()
    if start < len(text):
        segments.append(Segment(clean(text[start:]), False))
    return segments


def _message(message: Message) -> ShownMessage:
    image = clean(message.image_url) if message.image_url else None
    return ShownMessage(
        role=message.role.value,
        segments=_segments(message.content or ""),
        hole=message.is_hole,
        variable=clean(message.variable) if message.variable else None,
        image_url=image,
        image_link=http_url(image),
        calls=[clean(f"{call.name}({call.arguments})") for call in message.tool_calls],
        answers=clean(message.tool_call_id) if message.tool_call_id is not None else None,
    )


def _runs(lve: LVE) -> list[ShownRun]:
    if lve.runs is not None:
        return [
            ShownRun(
                clean(f"{run.name}, {count(run.repetitions, 'time')}"), [_message(m) for m in run.messages]
            )
            for run in lve.runs
        ]
    return [ShownRun(None, [_message(m) for m in lve.prompt or []])]


def _live(result: InstanceResult | None) -> str | None:
    if result is None:
        return None
    runs = len(result.verdicts)
    if not runs:
        return f"{len(result.errors)} failed"
    text = unsafe_rate(result.unsafe, runs, result.interval_95)
    return text + (f", {len(result.errors)} failed" if result.errors else "")


def _page(
    repo: Repository, lve: LVE, live: dict[tuple[str, str | None, int | None], InstanceResult]
) -> LVEPage:
    page = LVEPage(lve, slug(lve.rel.removeprefix("repository/")), slug(lve.category), runs=_runs(lve))
    page.lve_id = live_ids(repo).get(lve.rel)
    for recorded in lve.recorded():
        page.problems += len(recorded.problems.errors)
        for instance in recorded.instances:
            params, model_args = lve.split_args(instance.args)
            run_info = instance.data.get("run_info")
            date = run_info.get("timestamp") if isinstance(run_info, dict) else None
            author = instance.data.get("author")
            page.instances.append(
                ShownInstance(
                    file=clean(instance.file.rsplit("/", 1)[-1]),
                    line=instance.line,
                    parameters=_text(params) if params else "",
                    model_args=_text(model_args) if model_args else "",
                    response=_text(instance.response),
                    judged=clean(said) if (said := judge_said(instance.data.get("judgement"))) else None,
                    passed=instance.passed,
                    author=clean(author) if isinstance(author, str) else "",
                    date=clean(date) if isinstance(date, str) else "",
                    live=_live(live.get((lve.rel, instance.file, instance.line))),
                )
            )
    return page


@dataclass(frozen=True)
class Cell:
    unsafe: int
    instances: int
    lves: int

    @property
    def text(self) -> str:
        return f"{self.unsafe}/{self.instances} unsafe ({_percent(self.unsafe, self.instances)})"

    @property
    def level(self) -> int:
        """0 to 4, for shading only (the text says the same)."""
        return 0 if not self.unsafe else min(4, 1 + 4 * self.unsafe // self.instances)


class RowTotals:
    """The instances of some LVEs' rows (the whole site's, a taxonomy entry's), and how many are unsafe."""

    rows: list[Row]

    @property
    def instances(self) -> int:
        return sum(row.instances for row in self.rows)

    @property
    def unsafe(self) -> int:
        return sum(row.unsafe for row in self.rows)


@dataclass(frozen=True)
class TaxonomyEntry(RowTotals):
    """One taxonomy entry the LVEs are tagged with (`owasp-llm:2025:LLM01`, Prompt Injection) and its LVEs."""

    tag: str
    scheme: str
    value: str
    name: str | None
    rows: list[Row]


@dataclass(frozen=True)
class Row:
    """One LVE in the tables, the filters and the overview."""

    rel: str
    slug: str
    category: str
    model: str
    checker: str
    description: str
    instances: int
    unsafe: int
    lve_id: str | None = None
    taxonomy: tuple[str, ...] = ()  # its taxonomy tags as SCHEME:VALUE

    @property
    def taxonomy_entries(self) -> list[str]:
        """Each taxonomy tag, and the entry above a sub-entry (atlas:AML.T0051 for atlas:AML.T0051.001)."""
        found: list[str] = []
        for tag in self.taxonomy:
            parts = tag.split(".")
            found.extend(".".join(parts[:end]) for end in range(min(2, len(parts)), len(parts) + 1))
        return list(dict.fromkeys(found))

    @property
    def taxonomy_filter(self) -> str:
        """What the taxonomy filter matches, space-separated."""
        return " ".join(self.taxonomy_entries).lower()

    @property
    def verdict(self) -> str:
        """For the filters: 'unsafe' when any instance is, 'safe' when all are, 'none' without instances."""
        return "none" if not self.instances else "unsafe" if self.unsafe else "safe"

    @property
    def text(self) -> str:
        """What the search box matches."""
        return " ".join([self.lve_id or "", self.rel, self.description, self.checker]).lower()

    @classmethod
    def of(cls, page: LVEPage) -> Row:
        lve = page.lve
        return cls(
            clean(lve.rel),
            page.slug,
            clean(lve.category),
            clean(lve.model),
            clean(lve.checker_name),
            clean(lve.description),
            len(page.instances),
            page.unsafe,
            page.lve_id,
            tuple(
                clean(f"{tag['name']}:{tag['value']}")
                for tag in lve.tags
                if tag.get("name") in SCHEMES and isinstance(tag.get("value"), str)
            ),
        )


@dataclass(frozen=True)
class Site(RowTotals):
    title: str
    base_url: str | None
    rows: list[Row] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # LVEs whose test.json does not load
    statuses: dict[tuple[str, str], LVEStatus] = field(default_factory=dict)  # from the run history
    runs: int = 0  # in the run history
    newest: str | None = None  # when the history's newest run started

    @functools.cached_property
    def severities(self) -> dict[str, Severity]:
        """Each LVE's severity from evidence (history/severity.py)."""
        return severities(list(self.statuses.values()), self.newest)

    @functools.cached_property  # asked for each row of the status page: 10,000 rows, 200,000 statuses
    def history_models(self) -> list[str]:
        return sorted({model for _lve, model in self.statuses})

    def status(self, lve: str, model: str) -> LVEStatus:
        return self.statuses.get((lve, model)) or LVEStatus(lve, model, "never-run")

    def status_rows(self) -> Iterator[Markup]:
        """The rows of the status page, built here (a template would escape 200,000 cells one by one)."""
        from markupsafe import Markup, escape

        for row in self.rows:
            cells = "".join(
                f'<td class="state-{status.state}">{state_html(status)}</td>'
                for status in (self.status(row.rel, model) for model in self.history_models)
            )
            link = f'<a href="lves/{row.slug}.html#status">{escape(row.rel)}</a>'
            found = self.severities.get(row.rel)
            shown = f"{found.score:.1f} {found.level}" if found and found.level != "unknown" else "—"
            yield Markup(f'<tr><th scope="row">{link}</th>{cells}<td class="severity">{shown}</td></tr>')

    def state_counts(self) -> dict[tuple[str, str], int]:
        """(state, model) -> LVEs of the site in that state on that model."""
        counts: dict[tuple[str, str], int] = defaultdict(int)
        for row in self.rows:
            for model in self.history_models:
                counts[self.status(row.rel, model).state, model] += 1
        return counts

    @property
    def categories(self) -> list[str]:
        return sorted({row.category for row in self.rows})

    @property
    def models(self) -> list[str]:
        return sorted({row.model for row in self.rows})

    @property
    def checkers(self) -> list[str]:
        return sorted({row.checker for row in self.rows})

    @functools.cached_property
    def taxonomy(self) -> list[TaxonomyEntry]:
        """Every taxonomy entry the LVEs are tagged with, by scheme and id, with its LVEs."""
        grouped: dict[str, list[Row]] = defaultdict(list)
        for row in self.rows:
            for tag in row.taxonomy_entries:
                grouped[tag].append(row)
        entries = []
        for tag, rows in grouped.items():
            scheme, _, value = tag.partition(":")
            name = taxonomy_name(scheme, value)
            entries.append(TaxonomyEntry(tag, scheme, value, clean(name) if name else None, rows))
        order = {scheme: number for number, scheme in enumerate(SCHEMES)}
        return sorted(entries, key=lambda entry: (order.get(entry.scheme, len(order)), entry.value))

    def overview(self) -> dict[tuple[str, str], Cell]:
        counts: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
        for row in self.rows:
            cell = counts[row.category, row.model]
            cell[0] += row.unsafe
            cell[1] += row.instances
            cell[2] += 1
        return {key: Cell(*value) for key, value in counts.items()}

    def in_category(self, category: str) -> list[Row]:
        return [row for row in self.rows if row.category == category]


Live = dict[tuple[str, str | None, int | None], InstanceResult]


def _reports(paths: list[Path]) -> Live:
    from lvegit.run.attempt import load_report

    attempts = [attempt for path in paths for attempt in load_report(path).attempts.values()]
    return {(r.lve, r.file, r.line): r for r in by_instance(attempts)}


def _environment() -> Any:
    import jinja2

    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("lvegit.publish.site", "templates"),
        autoescape=True,  # every template is HTML
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    environment.filters["clean"] = lambda value: clean(str(value))
    environment.globals["slug"] = slug
    environment.globals["marks"] = STATE_MARKS
    from lvegit.publish.site.timeline import MARKERS

    environment.globals["markers"] = MARKERS
    environment.filters["count"] = count
    environment.filters["pretty_json"] = lambda value: clean(json.dumps(value, indent=2, ensure_ascii=False))
    return environment


@dataclass(frozen=True)
class _Batch:
    """The LVE pages one worker writes."""

    repo: Repository
    lve_dirs: list[Path]
    out: Path
    site: Site  # title, base URL and the history's runs (no rows, no statuses yet)
    live: Live
    history: History | None  # the run history, its files checked once by the parent; None: no runs


Statuses = dict[tuple[str, str], LVEStatus]


def _shown_statuses(batch: _Batch, lves: list[str]) -> tuple[Statuses, dict[str, list[ShownStatus]]]:
    """The statuses of the batch's LVEs, and each one's with its timelines, by LVE. Each worker reads the
    history for its own LVEs (the files are sorted by LVE: it reads little more than those), so that no
    core waits for the statuses of all."""
    history = batch.history
    if history is None:
        return {}, {}
    from lvegit.publish.site.timeline import timelines

    found = history.status(lves)
    site = Site(batch.site.title, batch.site.base_url, statuses=found, runs=batch.site.runs)
    shown: dict[str, list[ShownStatus]] = defaultdict(list)
    for (lve, model), timeline in sorted(timelines(history, lves).items()):
        shown[lve].append(ShownStatus(site.status(lve, model), timeline))
    return found, shown


def _write(environment: Any, site: Site, out: Path, path: str, template: str, **variables: Any) -> None:
    canonical = f"{site.base_url.rstrip('/')}/{path}" if site.base_url else None
    html = environment.get_template(template).render(
        site=site, root="../" * path.count("/"), canonical=canonical, **variables
    )
    write_inside(out, out / path, html.encode("utf-8"), "the site folder")


def _lve_pages(batch: _Batch) -> tuple[list[Row], list[str], Statuses]:
    """Load each LVE of the batch and write its page: (its table rows, the LVEs that do not load, their
    statuses on the models of the run history)."""
    environment = _environment()
    rows, skipped = [], []
    found, statuses = _shown_statuses(batch, [batch.repo.relative(lve_dir) for lve_dir in batch.lve_dirs])
    for lve_dir in batch.lve_dirs:
        lve, _problems, _text = load_lve(batch.repo, lve_dir)
        if lve is None:
            skipped.append(batch.repo.relative(lve_dir))
            continue
        page = _page(batch.repo, lve, batch.live)
        page.statuses = statuses.get(lve.rel, [])
        found_severity = severity([from_status(shown.status) for shown in page.statuses], batch.site.newest)
        page.severity = found_severity if found_severity.level != "unknown" else None
        _write(environment, batch.site, batch.out, f"lves/{page.slug}.html", "lve.html", page=page)
        rows.append(Row.of(page))
    return rows, skipped, found


def _all_lve_pages(batches: list[_Batch]) -> Iterator[tuple[list[Row], list[str], Statuses]]:
    """The batches' pages, on every core when there is more than one batch; results in batch order."""
    if len(batches) == 1:
        yield _lve_pages(batches[0])
        return
    import multiprocessing
    import os
    from concurrent.futures import ProcessPoolExecutor

    # spawn, not fork: the caller may have threads (a test's servers), and a forked lock would stay held.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(min(len(batches), os.cpu_count() or 1), mp_context=context) as pool:
        yield from pool.map(_lve_pages, batches)


def build(
    repo: Repository,
    out: Path,
    title: str,
    reports: list[Path],
    base_url: str | None,
    history: Path | None = None,
) -> Site:
    """Write the site of `repo` into `out` (its earlier pages and assets are replaced)."""
    if base_url is not None and http_url(base_url) is None:
        raise UsageError(f"--base-url must be an http(s) URL, not {base_url!r}")
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).is_file():
        # A rebuild replaces the site's folders: never those of a folder lvegit did not write.
        raise UsageError(
            f"{out} is not empty and holds no site written by lvegit site: choose an empty folder"
        )
    try:
        _make_folders(out)
        return _build(repo, out, title, reports, base_url, history)
    except FileProblem as exc:
        raise UsageError(f"cannot write the site: {exc}") from None


def _history(folder: Path | None) -> History | None:
    """The run history in `folder` (its files checked here, once, before any worker reads), None without
    runs. Without the data extra, the site is built without the history's pages, and says so."""
    if folder is None or not folder.is_dir():
        return None
    try:
        history = History.open(folder)
    except MissingExtra as exc:
        note(f"{exc}; the site is built without the run history's pages")
        return None
    return history if history.files else None


def _make_folders(out: Path) -> None:
    """The site's folders, emptied; a link in the place of one is removed, never followed."""
    output_folder(out, "the site folder")
    for folder in ("categories", "lves", "assets", "osv"):
        if (out / folder).is_symlink():
            (out / folder).unlink()
        shutil.rmtree(out / folder, ignore_errors=True)
        (out / folder).mkdir()
    marker = "written by lvegit site; a rebuild replaces this folder's pages\n"
    write_inside(out, out / MARKER, marker.encode(), "the site folder")


def _build(
    repo: Repository, out: Path, title: str, reports: list[Path], base_url: str | None, history: Path | None
) -> Site:
    found_history = _history(history)
    runs = len(found_history.files) if found_history else 0
    live = _reports(reports)
    lve_dirs = repo.lve_dirs()
    newest = found_history.newest_run() if found_history else None
    bare = Site(clean(title), base_url, runs=runs, newest=newest)
    batches = [
        _Batch(repo, lve_dirs[start : start + LVES_PER_BATCH], out, bare, live, found_history)
        for start in range(0, max(len(lve_dirs), 1), LVES_PER_BATCH)
    ]
    rows: list[Row] = []
    skipped: list[str] = []
    statuses: Statuses = {}
    for batch_rows, batch_skipped, found in _all_lve_pages(batches):
        rows += batch_rows
        skipped += batch_skipped
        statuses.update(found)
    site = Site(clean(title), base_url, rows, skipped, statuses, runs, newest)
    environment = _environment()
    _write(environment, site, out, "index.html", "index.html", overview=site.overview(), lves=site.rows)
    if site.statuses:
        _write(environment, site, out, "status.html", "status.html")
    for category in site.categories:
        rows = site.in_category(category)
        _write(
            environment,
            site,
            out,
            f"categories/{slug(category)}.html",
            "category.html",
            category=category,
            lves=rows,
        )
    static = resources.files("lvegit.publish.site") / "static"
    for name in ASSETS:
        write_inside(out, out / "assets" / name, static.joinpath(name).read_bytes(), "the site folder")
    _write_advisories_and_feed(repo, site, out, newest)
    return site


def page_of(lve_path: str) -> str:
    """An LVE's page, relative to the site's root."""
    return f"lves/{slug(lve_path.removeprefix('repository/'))}.html"


def _write_advisories_and_feed(repo: Repository, site: Site, out: Path, newest: str | None) -> None:
    """osv/<id>.json for each LVE with an id and osv/index.json (what an OSV mirror reads), and feed.xml."""
    from lvegit.publish.export.osv import advisories, write_advisories
    from lvegit.publish.site.feed import atom_feed, feed_entries

    records, _left_out = advisories(repo, site.statuses, newest)
    write_advisories(out, out / "osv", records, "the site folder")
    entries = feed_entries(load_cached(repo), site.statuses, page_of)
    write_inside(out, out / "feed.xml", atom_feed(site.title, site.base_url, entries), "the site folder")
