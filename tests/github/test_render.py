"""The verdict comment's pieces that the end-to-end Action tests do not reach."""

from __future__ import annotations

from lvegit.github import render
from lvegit.judge.results import AddedInstance


def test_an_added_instance_judged_by_a_model_shows_the_judges_answer_collapsed_with_it() -> None:
    added = AddedInstance(
        "repository/a/b/c/instances/i.jsonl", 2, False, "user: hi", "Use a pin.", "j/m: unsafe"
    )
    evidence = render._evidence(added)
    assert evidence.startswith("<details><summary>") and evidence.endswith("</details>")
    assert (
        "Response:\n\n```text\nUse a pin.\n```\n\nWhat the judge said, as the contributor recorded it (a claim):\n\n```text\nj/m: unsafe\n```\n\n</details>"
        in evidence
    )
    plain = render._evidence(AddedInstance("repository/a/b/c/instances/i.jsonl", 3, True, "user: hi", "no"))
    assert "Judged" not in plain
