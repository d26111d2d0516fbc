"""The site's pages from the repository's LVEs (and, given run reports, their live reproduction rates).

Everything an LVE or a model wrote reaches the pages through Jinja2's autoescaping; strings are made valid
Unicode first (a lone surrogate from a JSON escape becomes U+FFFD), URLs become links only when they are
http(s), and every page carries a Content-Security-Policy that allows the site's own script and stylesheet
and nothing else. The output is deterministic: the same repository gives the same bytes.
"""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from lvegit.base.errors import MissingExtra, UsageError
from lvegit.base.files import FileProblem, output_folder, write_inside
from lvegit.base.output import count, note
from lvegit.history.severity import impact_of, lve_severity
from lvegit.history.status import STATE_MARKS, History, LVEStatus
from lvegit.judge.results import judge_said, unsafe_rate
from lvegit.lve.ids import live_ids, load_cached
from lvegit.lve.problems import is_draft
from lvegit.lve.prompt import Message, response_text
from lvegit.lve.repo import Repository
from lvegit.lve.spec import LVE, load_lve
from lvegit.lve.template import SHOWN_PARAMETER
from lvegit.publish.site.model import (
    LVEPage,
    Row,
    Segment,
    ShownInstance,
    ShownMessage,
    ShownRun,
    ShownStatus,
    Site,
    clean,
    http_url,
    shown_status,
    slug,
    state_parts,
)
from lvegit.run.rerun import InstanceResult, by_instance

LVES_PER_BATCH = 500  # LVE pages a worker process writes at a time (a smaller repository: no workers)
ASSETS = ("site.css", "site.js")
MARKER = ".lvegit-site"  # in a folder lvegit site wrote: a rebuild may replace its pages


def _text(value: Any) -> str:
    return clean(response_text(value))


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
            if not instance.passed:  # the model that answered, as recorded; else the one test.json names
                model = run_info.get("model") if isinstance(run_info, dict) else None
                page.unsafe_on.add(clean(model if isinstance(model, str) and model else lve.model))
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


Live = dict[tuple[str, str | None, int | None], InstanceResult]


def _reports(paths: list[Path]) -> Live:
    from lvegit.run.attempt import load_report

    attempts = [attempt for path in paths for attempt in load_report(path).attempts.values()]
    return {(r.lve, r.file, r.line): r for r in by_instance(attempts)}


def _environment() -> Any:
    from lvegit.base.templates import environment
    from lvegit.publish.site.timeline import BOX

    made = environment(
        "lvegit.publish.site",
        autoescape=True,  # every template is HTML
        filters={
            "clean": lambda value: clean(str(value)),
            "count": count,
            "pretty_json": lambda value: clean(json.dumps(value, indent=2, ensure_ascii=False)),
        },
    )
    made.globals.update(slug=slug, state_parts=state_parts, marks=STATE_MARKS)
    timeline = made.get_template("timeline.html").module  # its macros, for every page
    made.globals.update(timeline=timeline, timeline_box=BOX, timeline_grid=timeline.grid(BOX))
    return made


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

    found = {
        (lve, clean(model)): shown_status(status) for (lve, model), status in history.status(lves).items()
    }
    site = Site(batch.site.title, batch.site.base_url, statuses=found, runs=batch.site.runs)
    shown: dict[str, list[ShownStatus]] = defaultdict(list)
    for (lve, model), timeline in sorted(timelines(history, lves).items()):
        shown[lve].append(ShownStatus(site.status(lve, clean(model)), timeline))
    return found, shown


def _write(environment: Any, site: Site, out: Path, path: str, template: str, **variables: Any) -> None:
    canonical = f"{site.base_url.rstrip('/')}/{path}" if site.base_url else None
    html = environment.get_template(template).render(
        site=site, root="../" * path.count("/"), canonical=canonical, **variables
    )
    write_inside(out, out / path, html.encode("utf-8"), "the site folder")


def lve_pages(batch: _Batch) -> tuple[list[Row], list[str], Statuses]:
    """Load each LVE of the batch and write its page: (its table rows, the LVEs left out: those that do not
    load and drafts that still hold `lvegit new`'s placeholders, their statuses on the models of the run
    history)."""
    environment = _environment()
    rows, skipped = [], []
    found, statuses = _shown_statuses(batch, [batch.repo.relative(lve_dir) for lve_dir in batch.lve_dirs])
    for lve_dir in batch.lve_dirs:
        lve, problems, _text = load_lve(batch.repo, lve_dir)
        if lve is None or is_draft(problems):
            skipped.append(batch.repo.relative(lve_dir))
            continue
        page = _page(batch.repo, lve, batch.live)
        page.statuses = statuses.get(lve.rel, [])
        impact = impact_of(lve.impact, lve.tags)
        found_severity = lve_severity([shown.status for shown in page.statuses], impact)
        page.severity = found_severity if found_severity.level != "unknown" else None
        _write(environment, batch.site, batch.out, f"lves/{page.slug}.html", "lve.html", page=page)
        rows.append(Row.of(page))
    return rows, skipped, found


def _all_lve_pages(batches: list[_Batch]) -> Iterator[tuple[list[Row], list[str], Statuses]]:
    """The batches' pages, on every core when there is more than one batch; results in batch order. Each
    core's process is lvegit.publish.site.pages, started as every process lvegit starts (see
    lvegit.base.processes): the repository's own files are never imported, and it needs no variable
    beyond the allow-list."""
    if len(batches) == 1:
        yield lve_pages(batches[0])
        return
    import os
    import pickle
    import subprocess
    from concurrent.futures import ThreadPoolExecutor

    from lvegit.base import processes

    workers = min(len(batches), os.cpu_count() or 1)
    shares = [batches[worker::workers] for worker in range(workers)]
    started = [
        processes.start(
            processes.lvegit_command("lvegit.publish.site.pages"),
            processes.environment(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        for _share in shares
    ]

    def exchange(process: subprocess.Popen[bytes], share: list[_Batch]) -> bytes:
        return process.communicate(pickle.dumps(share))[0]

    with ThreadPoolExecutor(workers) as threads:  # each share written while the others are read
        answers = list(threads.map(exchange, started, shares))
    written = []
    for process, answer in zip(started, answers, strict=True):
        if process.returncode != 0 or not answer:
            raise RuntimeError(
                f"a process writing the site's pages failed (exit status {process.returncode})"
            )
        outcome, found = pickle.loads(answer)
        if outcome == "raised":
            raise found
        written.append(found)
    for index in range(len(batches)):
        yield written[index % workers][index // workers]


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
    if site.runs:  # every page links it then
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
    _write_changes(repo, site, out, environment, found_history)
    _write_advisories(repo, site, out, newest)
    return site


def _write_changes(
    repo: Repository, site: Site, out: Path, environment: Any, history: History | None
) -> None:
    """changes.html (the newest events) and feed.xml (the same, as an Atom feed)."""
    from lvegit.history.events import events
    from lvegit.lve.repo import repository_url
    from lvegit.publish.site.feed import CHANGES_PAGE, CHANGES_SHOWN, About, atom_feed, feed_entries

    about = {row.rel: About(row.description, row.severity) for row in site.rows}
    pages = {row.rel: f"lves/{row.slug}.html" for row in site.rows}
    entries = feed_entries(load_cached(repo), events(history) if history else [], about, pages.get)
    _write(
        environment,
        site,
        out,
        CHANGES_PAGE,
        CHANGES_PAGE,
        entries=entries[:CHANGES_SHOWN],
        total=len(entries),
    )
    repository = http_url(repository_url(repo))
    repository = repository if repository and repository.startswith("https:") else None
    feed = atom_feed(site.title, site.base_url, repository, entries)
    write_inside(out, out / "feed.xml", feed, "the site folder")


def _write_advisories(repo: Repository, site: Site, out: Path, newest: str | None) -> None:
    """osv/<id>.json for each LVE with an id and osv/index.json (what an OSV mirror reads)."""
    from lvegit.publish.export.osv import advisories, write_advisories

    records, _left_out = advisories(repo, site.statuses)
    write_advisories(out, out / "osv", records, "the site folder")
