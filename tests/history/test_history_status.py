"""The status rule (fixed in, regressed, ...) as DuckDB computes it, against the rule written plainly."""

from __future__ import annotations

import re
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from lvegit.history.status import History, Moment, clean_attempts_needed

from builders import HistoryRun as Run
from builders import history_run, random_histories

NEEDED = clean_attempts_needed()
START = datetime(2026, 1, 5, 3, 0, tzinfo=UTC)


def test_fixed_needs_73_clean_attempts() -> None:
    """With none unsafe, 73 attempts put the upper 95% Wilson bound under 5%; 72 do not."""
    assert NEEDED == 73


def expected(runs: list[Run]) -> dict[str, Any]:
    """The rule of lvegit.history.status, run by run."""
    judged = [run for run in runs if run.unsafe + run.safe]
    if not judged:
        return {"state": "no-verdict"}
    clean, opener = 0, None
    first = last = comeback = fixed_before = None
    for run in judged:
        if run.unsafe:
            if clean >= NEEDED:
                comeback, fixed_before = run, opener
            first = first or run
            last = run
            clean, opener = 0, None
        else:
            opener = opener or run
            clean += run.safe
    current = judged[-1].version
    pooled = [run for run in judged if run.version == current]
    result: dict[str, Any] = {
        "first_reproduced": first and Moment(first.at, first.version),
        "last_reproduced": last and Moment(last.at, last.version),
        "current": (current, sum(r.unsafe for r in pooled), sum(r.unsafe + r.safe for r in pooled)),
        "fixed_in": None,
        "regressed_in": None,
    }
    if clean >= NEEDED:
        assert opener is not None
        result["state"] = "fixed" if last else "not-affected"
        result["fixed_in"] = Moment(opener.at, opener.version)
    elif comeback is not None:
        assert fixed_before is not None
        result["state"] = "regressed"
        result["regressed_in"] = Moment(comeback.at, comeback.version)
        result["fixed_in"] = Moment(fixed_before.at, fixed_before.version)
    else:
        result["state"] = "reproduces" if last else "inconclusive"
    return result


def test_status_follows_the_rule_on_random_histories(tmp_path: Path) -> None:
    """300 LVEs, each with a random history on one or two models (rates that change with versions, runs
    with few or many attempts, runs where every attempt failed), all in the same run files."""
    histories = random_histories(tmp_path, 20261124, START)
    found = History.open(tmp_path).status()
    assert set(found) == set(histories)
    states = set()
    for key, runs in histories.items():
        status, want = found[key], expected(runs)
        states.add(want["state"])
        assert status.state == want["state"], (key, runs)
        if want["state"] == "no-verdict":
            continue
        current = status.current
        assert current is not None
        assert (current.version, current.unsafe, current.attempts) == want["current"], (key, runs)
        for name in ("first_reproduced", "last_reproduced", "fixed_in", "regressed_in"):
            assert getattr(status, name) == want[name], (key, name, runs)
    # every state occurs, so that each branch of the query was compared
    assert states == {"reproduces", "fixed", "regressed", "not-affected", "inconclusive", "no-verdict"}


def test_a_run_that_saw_two_versions_reproduces_when_either_did(tmp_path: Path) -> None:
    """A model that changed version during a run: the run reproduced, whatever the other version did;
    only the runs after it can make it fixed."""
    lve = "repository/c/lve/m"
    history_run(tmp_path, "2026-01-05T03:00:00Z", {(lve, "m", "v1"): (5, 0)})
    history_run(tmp_path, "2026-01-12T03:00:00Z", {(lve, "m", "v1"): (3, 0), (lve, "m", "v2"): (0, 80)})
    [status] = History.open(tmp_path).status().values()
    assert (status.state, status.attempts) == ("reproduces", 88)
    assert status.last_reproduced == Moment("2026-01-12T03:00:00Z", "v1")
    history_run(tmp_path, "2026-01-19T03:00:00Z", {(lve, "m", "v2"): (0, 80)})
    [status] = History.open(tmp_path).status().values()
    assert (status.state, status.fixed_in) == ("fixed", Moment("2026-01-19T03:00:00Z", "v2"))


def test_status_reads_only_the_lves_and_models_asked_for(tmp_path: Path) -> None:
    history_run(
        tmp_path,
        "2026-01-05T03:00:00Z",
        {("repository/a/x/m", "m1", "v"): (1, 0), ("repository/a/y/m", "m2", "v"): (0, 1)},
    )
    history = History.open(tmp_path)
    assert set(history.status(["repository/a/x/m"])) == {("repository/a/x/m", "m1")}
    assert set(history.status(None, ["m2"])) == {("repository/a/y/m", "m2")}
    assert history.status(["repository/none"]) == {}


@pytest.mark.parametrize("missing", ["duckdb", "pyarrow"])
def test_without_the_data_extra_status_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, missing: str
) -> None:
    from lvegit.base.errors import UsageError

    history_run(tmp_path, "2026-01-05T03:00:00Z", {("repository/a/x/m", "m", "v"): (1, 0)})
    monkeypatch.setitem(sys.modules, missing, None)  # `import missing` raises ImportError
    monkeypatch.setitem(sys.modules, f"{missing}.parquet", None)
    from lvegit.base.extras import install_command

    with pytest.raises(UsageError, match=re.escape(f"needs {missing}: {install_command('data')}")):
        History.open(tmp_path).status()


def test_each_status_line_starts_with_the_name_its_count_gives_it() -> None:
    """`lvegit status` once said "not reproduced on too few attempts" on a line and counted it as
    "inconclusive" in its summary: one state, two names."""
    from typing import get_args

    from lvegit.history.status import LVEStatus, State

    moment = Moment("2026-01-05T03:00:00Z", "v2")
    for state in get_args(State):
        status = LVEStatus("repository/a/x/m", "m", state, fixed_in=moment, regressed_in=moment)
        assert status.summary.startswith(state.replace("-", " ")), (state, status.summary)
