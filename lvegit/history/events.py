"""What happened to each LVE on each model, run by run: the events a feed and a "what changed" page list.
Each event is fixed once the run it dates from is in the history: a later run adds events and never
changes or removes an earlier one (a regression after a fix leaves the fix an event).

The events follow the status rule (history/status.py, docs/history.md): runs whose attempts all failed
count for nothing; a run of several model versions is one run, named by the version of its first unsafe
attempt (or its first version when none was unsafe).
- *reproduced*: the first run that reproduced the LVE on a model (a model it had not reproduced on).
- *fixed*: the run whose clean attempts since the last reproduction reach the number that counts as fixed;
  the fix is dated from the first of those runs (the status's `fixed_in`).
- *regressed*: a reproduction after such a stretch of clean attempts (before any reproduction too: the status
  calls that model regressed, not affected before it).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from lvegit.history.status import History, Moment, clean_attempts_needed

EventKind = Literal["reproduced", "fixed", "regressed"]

# Per (LVE, model), its judged runs in order, numbered by the reproductions up to each (`stretch`): the runs
# of a stretch after its reproduction are clean, and their attempts are pooled.
_EVENTS: Final = """
WITH runs AS (
    SELECT lve, model, epoch_ms(run_at) AS started,
        coalesce(min(version) FILTER (WHERE unsafe), min(version) FILTER (WHERE unsafe IS NOT NULL))
            AS version,
        count(unsafe) AS n, count(*) FILTER (WHERE unsafe) AS k
    FROM attempts GROUP BY lve, model, run_at HAVING count(unsafe) > 0
),
numbered AS (
    SELECT *, sum(CASE WHEN k > 0 THEN 1 ELSE 0 END) OVER upto AS stretch
    FROM runs WINDOW upto AS (PARTITION BY lve, model ORDER BY started ROWS UNBOUNDED PRECEDING)
),
pooled AS (
    SELECT *, sum(CASE WHEN k = 0 THEN n ELSE 0 END) OVER within AS clean,
        min(started) FILTER (WHERE k = 0) OVER within AS opened_at,
        arg_min(version, started) FILTER (WHERE k = 0) OVER within AS opened_version
    FROM numbered
    WINDOW within AS (PARTITION BY lve, model, stretch ORDER BY started ROWS UNBOUNDED PRECEDING)
),
events AS (
    SELECT *, lag(clean) OVER ordered AS clean_before,
        lag(opened_at) OVER ordered AS before_at, lag(opened_version) OVER ordered AS before_version
    FROM pooled WINDOW ordered AS (PARTITION BY lve, model ORDER BY started)
)
SELECT lve, model, started, version,
    CASE WHEN k > 0 AND clean_before >= $needed THEN 'regressed'
        WHEN k > 0 AND stretch = 1 THEN 'reproduced'
        WHEN k = 0 AND stretch > 0 AND clean >= $needed AND clean - n < $needed THEN 'fixed' END AS kind,
    CASE WHEN k > 0 THEN before_at ELSE opened_at END,
    CASE WHEN k > 0 THEN before_version ELSE opened_version END
FROM events WHERE kind IS NOT NULL
ORDER BY started, lve, model
"""


@dataclass(frozen=True)
class Event:
    lve: str  # its path
    model: str
    kind: EventKind
    run: Moment  # the run it happened in: when it started, the version that answered
    fix: Moment | None = (
        None  # fixed: the first clean run (the status's `fixed_in`); regressed: the fix before
    )

    @property
    def version(self) -> str:
        """The model version the event names: the fix's for a fix, the run's otherwise."""
        return self.fix.version if self.kind == "fixed" and self.fix else self.run.version


def _iso(epoch_ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch_ms // 1000))


def events(history: History, lves: Sequence[str] | None = None) -> list[Event]:
    """Every event of the history (of these LVEs), oldest first."""
    needed = str(clean_attempts_needed())
    rows = history.query(lves, None, (), _EVENTS.replace("$needed", needed))
    return [
        Event(
            lve,
            model,
            kind,
            Moment(_iso(at), version),
            Moment(_iso(fix_at), fix_version) if kind != "reproduced" else None,
        )
        for lve, model, at, version, kind, fix_at, fix_version in rows
    ]
