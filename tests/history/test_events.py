"""The history's events (reproduced on a model, fixed, regressed) as DuckDB finds them, against the status
rule written plainly, run by run; and a later run only ever adds events."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from lvegit.history.events import Event, events
from lvegit.history.status import History, Moment, clean_attempts_needed

from builders import HistoryRun as Run
from builders import history_run, random_histories

NEEDED = clean_attempts_needed()
START = datetime(2026, 1, 5, 3, 0, tzinfo=UTC)


def expected(lve: str, model: str, runs: list[Run]) -> list[Event]:
    """The events of one LVE on one model, by the rule of lvegit.history.status."""
    found: list[Event] = []
    clean, opener, reproduced = 0, None, False
    for run in (run for run in runs if run.unsafe + run.safe):
        moment = Moment(run.at, run.version)
        if run.unsafe:
            if clean >= NEEDED:
                assert opener is not None
                found.append(Event(lve, model, "regressed", moment, Moment(opener.at, opener.version)))
            elif not reproduced:
                found.append(Event(lve, model, "reproduced", moment))
            clean, opener, reproduced = 0, None, True
        else:
            opener = opener or run
            if reproduced and clean < NEEDED <= clean + run.safe:
                found.append(Event(lve, model, "fixed", moment, Moment(opener.at, opener.version)))
            clean += run.safe
    return found


def test_events_follow_the_status_rule_on_random_histories(tmp_path: Path) -> None:
    """300 LVEs with random histories on one or two models: every event the rule gives, and no other,
    whatever runs of failed attempts lie between."""
    histories = random_histories(tmp_path, 20261126, START)
    found = events(History.open(tmp_path))
    want = [event for (lve, model), runs in histories.items() for event in expected(lve, model, runs)]
    key = lambda event: (event.run.at, event.lve, event.model)  # noqa: E731
    assert sorted(found, key=key) == sorted(want, key=key)
    assert {event.kind for event in found} == {"reproduced", "fixed", "regressed"}


def test_a_later_run_adds_events_and_changes_none(tmp_path: Path) -> None:
    """A regression after a fix: the fix stays an event, the regression is added; an error-only run and a
    clean run that fixes nothing add none."""
    lve = "repository/c/x/m"
    history_run(tmp_path, "2026-09-01T03:00:00Z", {(lve, "acme/chat", "v1"): (5, 5)})
    history_run(tmp_path, "2026-09-08T03:00:00Z", {(lve, "acme/chat", "v1"): (0, 80)})
    before = events(History.open(tmp_path))
    assert [event.kind for event in before] == ["reproduced", "fixed"]
    history_run(tmp_path, "2026-09-15T03:00:00Z", {(lve, "acme/chat", "v2"): (0, 0)}, failed=3)
    history_run(tmp_path, "2026-09-16T03:00:00Z", {(lve, "acme/chat", "v2"): (0, 40)})
    assert events(History.open(tmp_path)) == before
    history_run(tmp_path, "2026-09-22T03:00:00Z", {(lve, "acme/chat", "v3"): (1, 9)})
    after = events(History.open(tmp_path))
    assert after[:2] == before
    assert after[2] == Event(
        lve,
        "acme/chat",
        "regressed",
        Moment("2026-09-22T03:00:00Z", "v3"),
        Moment("2026-09-08T03:00:00Z", "v1"),
    )
