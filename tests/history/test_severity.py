"""Severity from evidence: the rule of history/severity.py, case by case, and `lvegit status` showing it."""

from __future__ import annotations

from typing import Any

import pytest

from lvegit.history.severity import ModelEvidence, level_of, severity

from builders import RepoBuilder, history_run, instance

NOW = "2026-10-01T00:00:00Z"


def reproduces(model: str, rate_low: float = 1.0, last: str = NOW, regressed: bool = False) -> ModelEvidence:
    return ModelEvidence(model, True, regressed, rate_low, last)


def test_nothing_reproducing_now_scores_none_and_nothing_concluded_is_unknown() -> None:
    fixed = ModelEvidence("a/m", False, False, 0.0, "2026-01-01T00:00:00Z")
    assert severity([fixed], NOW).level == "none" and severity([fixed], NOW).score == 0
    unrun = ModelEvidence("a/m", False, False, 0.0, None, concluded=False)
    assert severity([unrun], NOW).level == "unknown" and severity([], NOW).level == "unknown"


def test_each_part_adds_what_the_rule_says() -> None:
    one = severity([reproduces("a/m")], NOW)
    assert one.score == 6.9  # rate 4 + breadth 1.5/4 + 1.5/3 (0.875) + recent 2
    assert severity([reproduces("a/m", rate_low=0.5)], NOW).score == 4.9
    assert severity([reproduces("a/m", regressed=True)], NOW).score == 7.9
    wide = [reproduces(f"{vendor}/m{n}") for vendor in ("a", "b", "c") for n in range(2)]
    assert severity(wide, NOW).score == 9.0 and severity(wide, NOW).level == "critical"
    assert (severity(wide, NOW).models, severity(wide, NOW).vendors) == (6, 3)


@pytest.mark.parametrize(
    ("last", "recency"),
    [
        ("2026-07-03T00:00:00Z", 2),
        ("2026-07-02T00:00:00Z", 1),
        ("2025-10-01T00:00:00Z", 1),
        ("2025-09-30T00:00:00Z", 0),
    ],
)
def test_recency_counts_days_from_the_last_reproduction_to_the_newest_evidence(
    last: str, recency: int
) -> None:
    assert severity([reproduces("a/m", last=last)], NOW).score == round(4 + 0.875 + recency, 1)


def test_only_models_it_reproduces_on_now_count() -> None:
    fixed = ModelEvidence("b/other", False, False, 0.0, NOW)
    assert severity([reproduces("a/m"), fixed], NOW).vendors == 1


@pytest.mark.parametrize(
    ("score", "level"), [(0, "none"), (0.1, "low"), (3.9, "low"), (4, "medium"), (6.9, "medium"), (7, "high"),
                         (8.9, "high"), (9, "critical"), (10, "critical")]
)  # fmt: skip
def test_levels_are_the_cvss_bands(score: float, level: str) -> None:
    assert level_of(score) == level


def test_status_shows_the_severity_of_each_lve_with_a_verdict(repo: RepoBuilder, cli: Any) -> None:
    for name in ("broken", "fine", "unrun"):
        repo.lve(f"cat/{name}", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    broken, fine = (f"repository/cat/{name}/openai--gpt-4o-mini" for name in ("broken", "fine"))
    folder = repo.root / "history"
    history_run(
        folder, "2026-09-01T03:00:00Z", {(broken, "a/m", "v1"): (20, 0), (fine, "a/m", "v1"): (0, 80)}
    )
    status = cli("status", cwd=repo.root)
    assert status.code == 0, status.err
    lines = status.out.splitlines()
    after_broken = lines[lines.index(broken) + 2]
    assert (
        after_broken.startswith("  severity")
        and "6.2 medium: 1 model, 1 vendor, unsafe rate at least 84%" in after_broken
    )  # Wilson: 20 of 20
    assert "(from evidence)" in after_broken
    assert "0.0 none: reproduces on no model now" in lines[lines.index(fine) + 2]
    unrun = lines.index("repository/cat/unrun/openai--gpt-4o-mini")
    assert all("severity" not in text for text in lines[unrun:])
