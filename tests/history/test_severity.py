"""The one severity model (history/severity.py): exploitability from this LVE's evidence, impact from its
test.json or tag, the vector that recomputes the score, and `lvegit status` showing it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lvegit.history.severity import (
    ASSUMED,
    Impact,
    ModelEvidence,
    Vector,
    impact_of,
    level_of,
    lve_severity,
    parse_vector,
    score_of_vector,
    severity,
)
from lvegit.history.status import History

from builders import RepoBuilder, history_run, instance

NOW = "2026-10-01T00:00:00Z"
CRITICAL = Impact("critical", "declared")  # weight 1: the score is the exploitability


def reproduces(model: str, rate_low: float = 1.0, last: str = NOW, regressed: bool = False) -> ModelEvidence:
    return ModelEvidence(model, True, regressed, rate_low, last, last)


def test_nothing_reproducing_now_scores_none_and_nothing_concluded_is_unknown() -> None:
    fixed = ModelEvidence("a/m", False, False, 0.0, "2026-01-01T00:00:00Z", NOW, "fixed")
    assert severity([fixed]).level == "none" and severity([fixed]).score == 0
    assert severity([fixed]).as_of == NOW
    unrun = ModelEvidence("a/m", False, False, 0.0, None, concluded=False)
    assert severity([unrun]).level == "unknown" and severity([]).level == "unknown"
    assert severity([unrun]).vector is None


def test_each_part_of_exploitability_adds_what_the_rule_says() -> None:
    one = severity([reproduces("a/m")], CRITICAL)
    assert one.score == one.exploitability == 6.9  # rate 4 + breadth 1.5/4 + 1.5/3 (0.875) + recent 2
    assert severity([reproduces("a/m", rate_low=0.5)], CRITICAL).score == 4.9
    assert severity([reproduces("a/m", regressed=True)], CRITICAL).score == 7.9
    wide = [reproduces(f"{vendor}/m{n}") for vendor in ("a", "b", "c") for n in range(2)]
    found = severity(wide, CRITICAL)
    assert (found.score, found.level) == (9.0, "critical")
    assert found.vector is not None and (found.vector.models, found.vector.vendors) == (6, 3)


@pytest.mark.parametrize(
    ("impact", "score", "level"),
    [("low", 3.9, "low"), ("medium", 5.8, "medium"), ("high", 7.0, "high"), ("critical", 7.8, "high")],
)
def test_impact_weighs_the_exploitability(impact: Any, score: float, level: str) -> None:
    """The demo's `multiply` (7.8 exploitability): its tag says low, so it scores low, not high."""
    found = severity([reproduces("a/m", rate_low=0.97, regressed=True)], Impact(impact, "tag"))
    assert found.exploitability == 7.8 and (found.score, found.level) == (score, level)


def test_the_impact_is_declared_else_the_severity_tag_else_assumed() -> None:
    tags = [{"name": "severity", "value": "low"}]
    assert impact_of("critical", tags) == Impact("critical", "declared")
    assert impact_of(None, tags) == Impact("low", "tag")
    assert impact_of("catastrophic", []) == ASSUMED == Impact("medium", "assumed")
    assert impact_of(None, [{"name": "severity", "value": 3}]) == ASSUMED


@pytest.mark.parametrize(
    ("last", "recency"),
    [
        ("2026-07-03T00:00:00Z", 2),
        ("2026-07-02T00:00:00Z", 1),
        ("2025-10-01T00:00:00Z", 1),
        ("2025-09-30T00:00:00Z", 0),
    ],
)
def test_recency_counts_days_from_the_last_reproduction_to_this_lves_newest_verdict(
    last: str, recency: int
) -> None:
    evidence = ModelEvidence("a/m", True, False, 1.0, last, NOW)
    assert severity([evidence], CRITICAL).score == round(4 + 0.875 + recency, 1)


def test_only_models_it_reproduces_on_now_count_and_each_model_has_its_part() -> None:
    fixed = ModelEvidence("b/other", False, False, 0.0, NOW, NOW, "fixed")
    found = severity([reproduces("a/m"), fixed], CRITICAL)
    assert found.vector is not None and found.vector.vendors == 1
    assert [(part.model, part.state, part.score) for part in found.per_model] == [
        ("a/m", "reproduces", 6.9),
        ("b/other", "fixed", 0.0),
    ]


@pytest.mark.parametrize(
    ("score", "level"), [(0, "none"), (0.1, "low"), (3.9, "low"), (4, "medium"), (6.9, "medium"), (7, "high"),
                         (8.9, "high"), (9, "critical"), (10, "critical")]
)  # fmt: skip
def test_levels_are_the_cvss_bands(score: float, level: str) -> None:
    assert level_of(score) == level


@pytest.mark.parametrize(
    "evidence",
    [
        [reproduces("a/m", rate_low=0.9753, regressed=True)],
        [reproduces(f"{v}/m", rate_low=0.31, last="2025-01-01T00:00:00Z") for v in "abcde"],
        [ModelEvidence("a/m", False, False, 0.0, NOW, NOW, "fixed")],
    ],
)
@pytest.mark.parametrize("impact", ["low", "medium", "high", "critical"])
def test_the_vector_recomputes_the_score(evidence: list[ModelEvidence], impact: Any) -> None:
    found = severity(evidence, Impact(impact, "declared"))
    assert found.vector is not None
    text = str(found.vector)
    assert parse_vector(text) == found.vector and str(parse_vector(text)) == text
    assert score_of_vector(text) == found.score


@pytest.mark.parametrize(
    "text", ["", "LVESS:1/RL:1.5/MO:1/VE:1/DS:0/RG:N/IM:M", "LVESS:1/RL:0.50/MO:1/VE:1/DS:0/RG:N/IM:Z"]
)
def test_a_malformed_vector_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not a severity vector"):
        parse_vector(text)


def test_vector_string_form() -> None:
    assert str(Vector(0.97, 1, 1, 0, True, "low")) == "LVESS:1/RL:0.97/MO:1/VE:1/DS:0/RG:Y/IM:L"


def test_runs_of_other_lves_and_runs_of_only_errors_do_not_move_a_score(repo: RepoBuilder) -> None:
    folder = repo.root / "history"
    broken, other = "repository/cat/broken/a--m", "repository/cat/other/a--m"
    history_run(folder, "2026-01-01T03:00:00Z", {(broken, "a/m", "v1"): (20, 0)})

    def scored() -> tuple[float, str | None]:
        found = lve_severity(list(History.open(folder).status([broken]).values()))
        return found.score, found.as_of

    before = scored()
    assert before == (4.7, "2026-01-01T03:00:00Z")  # 0.75 x 6.2 (4 x 0.83 + 0.875 + 2)
    history_run(folder, "2027-06-01T03:00:00Z", {(other, "a/m", "v1"): (5, 5)})  # 17 months later
    assert scored() == before
    history_run(folder, "2027-07-01T03:00:00Z", {(broken, "a/m", "v1"): (0, 0)}, failed=5)
    assert scored() == before
    history_run(folder, "2027-08-01T03:00:00Z", {(broken, "a/m", "v1"): (0, 3)})  # a verdict: it ages
    assert scored()[1] == "2027-08-01T03:00:00Z" and scored()[0] < before[0]


def test_status_shows_the_severity_of_each_lve_with_a_verdict(repo: RepoBuilder, cli: Any) -> None:
    for name in ("broken", "fine", "unrun"):
        repo.lve(f"cat/{name}", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    test_json = repo.root / "repository/cat/broken/openai--gpt-4o-mini/test.json"
    test_json.write_text(json.dumps({**json.loads(test_json.read_text()), "impact": "high"}))
    broken, fine = (f"repository/cat/{name}/openai--gpt-4o-mini" for name in ("broken", "fine"))
    folder = repo.root / "history"
    history_run(
        folder, "2026-09-01T03:00:00Z", {(broken, "a/m", "v1"): (20, 0), (fine, "a/m", "v1"): (0, 80)}
    )
    status = cli("status", cwd=repo.root)
    assert status.code == 0, status.err
    lines = status.out.splitlines()
    after_broken = lines[lines.index(broken) + 2]
    assert after_broken.startswith("  severity") and after_broken.split()[1:4] == [
        "5.6",
        "medium:",
        "exploitability",
    ]
    assert (
        "unsafe rate at least 83%" in after_broken and "impact high (declared in test.json)" in after_broken
    )
    assert "0.0 none: reproduces on no model now" in lines[lines.index(fine) + 2]
    unrun = lines.index("repository/cat/unrun/openai--gpt-4o-mini")
    assert all("severity" not in text for text in lines[unrun:])
