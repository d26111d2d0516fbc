"""One count of live results for `run`, `report` and the Action's results file."""

from __future__ import annotations

from lvegit.github.results import LiveRecord
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
    records = [
        LiveRecord(
            file=r.file,
            line=r.line,
            recorded=r.recorded,
            verdicts=r.verdicts,
            unsafe=r.unsafe,
            runs=len(r.verdicts),
            interval_95=list(r.interval_95),
            agree=r.agree,
            errors=r.errors,
        )
        for r in results
    ]
    assert tally(records) == EXPECTED
