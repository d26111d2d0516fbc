"""One count of live results for `run`, `report` and the Action's results file."""

from __future__ import annotations

from lvegit.run.records import live_record
from lvegit.run.rerun import InstanceResult, Tally, tally

# (recorded, verdicts, errors): agrees; disagrees; disagrees with a failed attempt too; only failed;
# agrees with a failed attempt; nothing judged and nothing failed (skipped)
CASES = [
    (True, [True], []),
    (True, [False], []),
    (True, [True, False], ["HTTP 500"]),
    (False, [], ["gave up"]),
    (False, [False], ["timed out"]),
    (True, [], []),
]
EXPECTED = Tally(agree=1, disagree=2, error=2, skipped=1)


def test_run_counts_each_instance_once() -> None:
    results = [
        InstanceResult("l", "f", n, recorded, verdicts, errors)
        for n, (recorded, verdicts, errors) in enumerate(CASES)
    ]
    assert tally(results) == EXPECTED


def test_the_actions_results_file_counts_the_same() -> None:
    results = [
        InstanceResult("l", "f", n, recorded, verdicts, errors)
        for n, (recorded, verdicts, errors) in enumerate(CASES)
    ]
    records = [live_record(r) for r in results]
    assert tally(records) == EXPECTED
