"""The verdict comment's pieces that the end-to-end Action tests do not reach."""

from __future__ import annotations

from lvegit.github import render
from lvegit.judge.results import AddedInstance


def test_an_added_instance_judged_by_a_model_shows_the_judges_answer_collapsed_with_it() -> None:
    added = AddedInstance(
        "repository/a/b/c/instances/i.jsonl", 2, False, "user: hi", "Use a pin.", "j/m: unsafe"
    )
    evidence = str(render._comment().evidence(added))
    assert evidence.startswith("<details><summary>") and evidence.endswith("</details>")
    assert (
        "Response:\n\n```text\nUse a pin.\n```\n\nWhat the judge said, as the contributor recorded it (a claim):\n\n```text\nj/m: unsafe\n```\n\n</details>"
        in evidence
    )
    plain = str(
        render._comment().evidence(
            AddedInstance("repository/a/b/c/instances/i.jsonl", 3, True, "user: hi", "no")
        )
    )
    assert "Judged" not in plain


def test_an_annotation_of_a_finding_without_a_field_is_its_message_alone() -> None:
    """A draft's test.prompt placeholder (no field) was annotated `title=lvegit::: still holds ...`."""
    from lvegit.lve.problems import Problem

    prompt = Problem(
        "error", "repository/c/x/m/test.prompt", "", "still holds the placeholder: write the prompt", 1
    )
    assert render._annotated(prompt, [1])[2] == "still holds the placeholder: write the prompt"
    field = Problem("error", "repository/c/x/m/test.json", "description", "still holds the placeholder", 2)
    assert render._annotated(field, [2, 3])[2] == "description: still holds the placeholder (2 lines: 2-3)"


def test_invalid_verdicts_are_counted_apart_in_the_replay_and_live_columns() -> None:
    """An environment LVE's check that cannot judge gives an invalid verdict: neither safe nor unsafe, so
    the comment says how many of the reproduced and re-run verdicts were invalid."""
    from types import SimpleNamespace

    from lvegit.judge.records import ReplayCounts
    from lvegit.judge.results import ReplayResult
    from lvegit.run.records import LiveRecord

    file = "repository/a/b/m/instances/i.jsonl"
    replayed = [
        ReplayResult("repository/a/b/m", file, 1, None, None, "reproduced"),
        ReplayResult("repository/a/b/m", file, 2, False, False, "reproduced"),
    ]
    counts = ReplayCounts(reproduced=2, mismatch=0, skipped=0, error=0)
    comment = render._comment()
    lve = SimpleNamespace(replay=counts, replayed=replayed, valid=True)
    assert str(comment.replay(lve)).strip() == "2 reproduced (1 of them invalid)"
    assert str(comment.replayed(replayed[0])).strip() == "✅ reproduced (invalid)"
    assert str(comment.replayed(replayed[1])).strip() == "✅ reproduced"
    live = LiveRecord(
        file=file, line=1, recorded=None, verdicts=[False], unsafe=1, runs=1, interval_95=[0.0, 1.0],
        agree=None, errors=[], invalid=2,
    )  # fmt: skip
    assert str(comment.live_run(live)).strip() == "1/1 unsafe, 2 invalid"
    assert str(comment.live(SimpleNamespace(live=[live]), True)).strip() == "1/1 unsafe, 2 invalid"
