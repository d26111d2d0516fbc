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


def test_results_are_handed_on_in_plan_order_as_soon_as_they_and_those_before_them_end() -> None:
    from lvegit.run.attempt import Attempt
    from lvegit.run.rerun import Outcomes

    def attempt(line: int, repetition: int, verdict: bool) -> Attempt:
        return Attempt(
            f"{line}.{repetition}", "l", "m", {}, repetition, "f", line, True, "complete", verdict=verdict
        )

    handed: list[int | None] = []
    outcomes = Outcomes(emit=lambda result: handed.append(result.line))
    planned = [attempt(line, repetition, True) for line in (1, 2, 3) for repetition in (0, 1)]
    for planned_attempt in planned:
        outcomes.expect(planned_attempt)
    ended = {a.id: a for a in planned}
    for key, expected in [
        ("2.0", []),  # line 1 is still running: nothing goes before it
        ("1.1", []),
        ("1.0", [1]),  # line 1 is complete; line 2 waits for its second repetition
        ("3.0", [1]),
        ("3.1", [1]),
        ("2.1", [1, 2, 3]),
    ]:
        outcomes.add(ended[key])
        assert handed == expected, key
    assert outcomes.results == [] and outcomes.attempts == 6  # nothing is held once handed on
