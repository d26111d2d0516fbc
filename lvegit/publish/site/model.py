"""What the site's pages show: an LVE's page (LVEPage and the parts it shows), the rows of the LVE tables
(Row), and the whole site (Site: its rows, the history's statuses and what is counted from them). Built by
build.py, rendered by the Jinja templates; nothing here writes a file or HTML beyond escaped cells.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from lvegit.base.escape import shown_text
from lvegit.history.severity import Severity
from lvegit.history.status import STATE_MARKS, LVEStatus, Moment, State
from lvegit.lve.spec import LVE
from lvegit.lve.taxonomy import SCHEMES
from lvegit.lve.taxonomy import name_of as taxonomy_name

if TYPE_CHECKING:
    from lvegit.publish.site.timeline import Timeline

INSTANCES_SHOWN = 100  # instances in the open on an LVE page; the rest in collapsed groups of this size


def clean(text: str) -> str:
    """Valid Unicode with control and bidi characters shown as escapes (base/escape.py: shown_text)."""
    return shown_text(text)


@functools.lru_cache(maxsize=4096)  # a history has few models and versions, in 100,000s of statuses
def _shown_name(text: str) -> str:
    return clean(text)


def _shown_moment(moment: Moment | None) -> Moment | None:
    if moment is None or _shown_name(moment.version) == moment.version:
        return moment
    return Moment(moment.at, _shown_name(moment.version))


def shown_status(status: LVEStatus) -> LVEStatus:
    """A status of the run history as the site shows it: its model and versions, which a pull request's
    history file may have written, cleaned like every other text (the LVE is the repository's own path).
    The status itself where none needs it, as nearly always (a site shows 100,000s)."""
    current = status.current
    moments = (
        status.first_reproduced,
        status.last_reproduced,
        status.fixed_in,
        status.regressed_in,
        status.last_verdict,
    )
    texts = [status.model, *(m.version for m in moments if m is not None)]
    if current is not None:
        texts.append(current.version)
    if all(_shown_name(text) == text for text in texts):
        return status
    return dataclasses.replace(
        status,
        model=_shown_name(status.model),
        first_reproduced=_shown_moment(status.first_reproduced),
        last_reproduced=_shown_moment(status.last_reproduced),
        fixed_in=_shown_moment(status.fixed_in),
        regressed_in=_shown_moment(status.regressed_in),
        current=None
        if current is None
        else dataclasses.replace(current, version=_shown_name(current.version)),
        last_verdict=_shown_moment(status.last_verdict),
    )


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
    passed: bool | None  # None: invalid (the output could not be judged)
    author: str
    date: str
    live: str | None  # the live reproduction, from run reports


@dataclass(frozen=True)
class ShownStatus:
    """The LVE on one model of the run history: its status and its timeline."""

    status: LVEStatus
    timeline: Timeline


@functools.cache  # a status page has 200,000 cells of a few summaries
def _state_parts(state: State, summary: str) -> tuple[str, str, str | None]:
    match = re.fullmatch(r"(.*) \((\d{4}-\d{2}-\d{2})\)", summary)
    words, date = match.groups() if match else (summary, None)
    return STATE_MARKS[state], clean(words), date


def state_parts(status: LVEStatus) -> tuple[str, str, str | None]:
    """A status as a table cell shows it: its mark, its words, and the date it dates from (a cell keeps
    a date on one line)."""
    return _state_parts(status.state, status.summary)


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
    unsafe_on: set[str] = field(default_factory=set)  # the models its unsafe recorded instances came from

    @property
    def affects(self) -> tuple[str, ...]:
        """The models the evidence says it affects: those it reproduces on in the run history, and those of
        its unsafe recorded instances unless the history says it is fixed or never reproduced there since."""
        states = {shown.status.model: shown.status.state for shown in self.statuses}
        found = {model for model, state in states.items() if state in ("reproduces", "regressed")}
        found |= {model for model in self.unsafe_on if states.get(model) not in ("fixed", "not-affected")}
        return tuple(sorted(found))

    @property
    def safe(self) -> int:
        return sum(i.passed is True for i in self.instances)

    @property
    def unsafe(self) -> int:
        return sum(i.passed is False for i in self.instances)  # invalid ones are neither

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
    affects: tuple[str, ...] = ()  # the models the evidence says it affects (LVEPage.affects)
    severity: Severity | None = None  # once some run gave a verdict (history/severity.py)

    @property
    def severity_text(self) -> str:
        return f"{self.severity.score:.1f} {self.severity.level}" if self.severity else "none yet"

    @property
    def severity_order(self) -> str:
        """What the severity column sorts by: the score, below every score while there is none."""
        return f"{self.severity.score:.1f}" if self.severity else "-1"

    @property
    def affects_filter(self) -> str:
        """What the model filter matches: the models, one a line (a model id holds no line break)."""
        return "\n".join(model.lower() for model in self.affects)

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
    def rel_parts(self) -> list[str]:
        """Its path's folders: a table breaks the path after their slashes only."""
        return self.rel.split("/")

    @functools.cached_property  # each table the LVE is in asks
    def text(self) -> str:
        """What the search box matches: id, path, description, checker, and taxonomy ids and names."""
        names = [taxonomy_name(*tag.split(":", 1)) or "" for tag in self.taxonomy_entries]
        words = [self.lve_id or "", self.rel, self.description, self.checker, *self.taxonomy_entries, *names]
        return " ".join(words).lower()

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
            page.affects,
            page.severity,
        )


@dataclass(frozen=True)
class Site(RowTotals):
    title: str
    base_url: str | None
    rows: list[Row] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # LVEs whose test.json does not load, and drafts
    statuses: dict[tuple[str, str], LVEStatus] = field(default_factory=dict)  # from the run history
    runs: int = 0  # in the run history
    newest: str | None = None  # when the history's newest run started

    @functools.cached_property
    def lves_with_history(self) -> set[str]:
        return {lve for lve, _model in self.statuses}

    @functools.cached_property  # asked for each row of the status page: 10,000 rows, 200,000 statuses
    def history_models(self) -> list[str]:
        return sorted({model for _lve, model in self.statuses})

    def status(self, lve: str, model: str) -> LVEStatus:
        return self.statuses.get((lve, model)) or LVEStatus(lve, model, "never-run")

    def status_lines(self) -> Iterator[tuple[Row, str, list[LVEStatus]]]:
        """Each row of the status page: the LVE's row, the anchor of its page's statuses (none without any:
        its page has no such section) and its status on each model of the history."""
        for row in self.rows:
            anchor = "#status" if row.rel in self.lves_with_history else ""
            yield row, anchor, [self.status(row.rel, model) for model in self.history_models]

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
        """The models LVEs were written for (test.json), the columns of the overview."""
        return sorted({row.model for row in self.rows})

    @property
    def affected_models(self) -> list[str]:
        """The models the evidence says some LVE affects: what the model filter offers."""
        return sorted({model for row in self.rows for model in row.affects})

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
