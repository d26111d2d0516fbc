"""Taxonomy tags (OWASP LLM 2025, OWASP Agentic 2026, MITRE ATLAS, AVID, CWE): checked offline against the
shipped lists, and `--tag SCHEME:VALUE` picking LVEs by them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lvegit.lve import taxonomy

from builders import PROJECT_ROOT, REFERENCE, RepoBuilder, instance


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("owasp-llm", "2025:LLM01"),
        ("owasp-llm", "2025:LLM10"),
        ("owasp-agentic", "2026:ASI01"),
        ("atlas", "AML.T0051.001"),
        ("atlas", "AML.TA0002"),
        ("avid", "S0403"),
        ("cwe", "CWE-1426"),
        ("cwe", "CWE-1427"),  # CWE 4.16, after the shipped list's 4.15
        # as their publishers write them
        ("owasp-llm", "LLM01:2025"),
        ("owasp-agentic", "ASI01:2026"),
        ("cwe", "1426"),
    ],
)
def test_a_known_entry_validates(repo: RepoBuilder, cli: Any, name: str, value: str) -> None:
    repo.lve("cat/tagged", {"tags": [{"name": name, "value": value}]})
    result = cli("validate", "--all", "--strict", cwd=repo.root)
    assert result.code == 0, result.out


@pytest.mark.parametrize(
    ("name", "value", "complaint"),
    [
        ("owasp-llm", "LLM01", "'LLM01' needs its edition, as in 2025:LLM01"),
        ("owasp-llm", "2024:LLM01", "has no edition '2024' here (known: 2025)"),
        (
            "owasp-llm",
            "2025:LLM11",
            "'LLM11' is no id of OWASP Top 10 for LLM Applications 2025 (LLM01 to LLM10)",
        ),
        ("owasp-agentic", "2026:ASI11", "'ASI11' is no id of OWASP Top 10 for Agentic Applications 2026"),
        ("atlas", "AML.T9999", "'AML.T9999' is no id of MITRE ATLAS (5.6.0)"),
        ("avid", "S9999", "'S9999' is no id of AVID taxonomy"),
        ("cwe", "CWE-x", "'CWE-x' is not a CWE id such as CWE-1426"),
        ("cwe", "CWE-99999", "'CWE-99999' is no id of CWE (4.15+4.16)"),
        ("owasp-llm", "LLM01:2024", "has no edition '2024' here (known: 2025)"),
    ],
)
def test_an_unknown_entry_is_an_error_naming_the_tag(
    repo: RepoBuilder, cli: Any, name: str, value: str, complaint: str
) -> None:
    repo.lve("cat/tagged", {"tags": [{"name": "severity", "value": "low"}, {"name": name, "value": value}]})
    result = cli("validate", "--all", "--format", "json", cwd=repo.root)
    assert result.code == 1
    [error] = result.json()["lves"][0]["errors"]
    assert error["field"] == "tags[1].value" and complaint in error["message"], error


def test_the_shipped_lists_are_the_sources(monkeypatch: pytest.MonkeyPatch) -> None:
    """ATLAS as MITRE's data has it (tests/reference), AVID as avidtools defines it."""
    shipped = taxonomy.taxonomies()
    import yaml

    data = yaml.safe_load((REFERENCE / "ATLAS.yaml").read_text(encoding="utf-8"))
    ids = {
        e["id"]
        for m in data["matrices"]
        for kind in ("tactics", "techniques", "mitigations")
        for e in m[kind]
    }
    assert set(shipped["atlas"]["editions"][str(data["version"])]) == ids
    from avidtools.datamodels.enums import SepEnum

    assert set(shipped["avid"]["editions"]["avidtools"]) == {str(m.value).split(":")[0] for m in SepEnum}
    assert (
        len(shipped["owasp-llm"]["editions"]["2025"])
        == len(shipped["owasp-agentic"]["editions"]["2026"])
        == 10
    )
    assert taxonomy.name_of("owasp-llm", "2025:LLM01") == "Prompt Injection"


def tagged_repository(repo: RepoBuilder) -> None:
    rows = {"i.jsonl": [instance("3", True, a=1, b=2)]}
    repo.lve(
        "sec/injection",
        {"tags": [{"name": "owasp-llm", "value": "2025:LLM01"}, {"name": "atlas", "value": "AML.T0051.001"}]},
        instances=rows,
    )
    repo.lve(
        "sec/jailbreak",
        {"tags": [{"name": "owasp-llm", "value": "2025:LLM01"}, {"name": "atlas", "value": "AML.T0054"}]},
        instances=rows,
    )
    repo.lve("rel/math", {"tags": [{"name": "owasp-llm", "value": "2025:LLM09"}]}, instances=rows)


@pytest.mark.parametrize(
    ("tags", "picked"),
    [
        (["owasp-llm:2025:LLM01"], ["sec/injection", "sec/jailbreak"]),
        (["atlas:AML.T0051"], ["sec/injection"]),  # a technique takes its sub-techniques
        (["owasp-llm:2025:LLM01", "atlas:AML.T0054"], ["sec/jailbreak"]),  # every --tag
        (["owasp-agentic:2026:ASI01"], []),
        (["LLM01:2025", "AML.T0054"], ["sec/jailbreak"]),  # a publisher's id alone: unambiguous
    ],
)
def test_tag_selects_lves_for_every_command_that_selects(
    repo: RepoBuilder, cli: Any, adding: Any, tags: list[str], picked: list[str]
) -> None:
    tagged_repository(repo)
    options = [word for tag in tags for word in ("--tag", tag)]
    expected = [f"repository/{name}/openai--gpt-4o-mini" for name in picked]
    listed = cli("list", *options, "--format", "json", cwd=repo.root).json()
    assert [lve["path"] for lve in listed["lves"]] == expected
    checked = cli("check", *options, "--format", "json", cwd=repo.root).json()
    assert [lve["path"] for lve in checked["lves"]] == expected
    run = cli("run", *options, "--format", "json", cwd=repo.root)
    assert {item["lve"] for item in run.json()["instances"]} == set(expected), run.err


@pytest.mark.parametrize("selector", ["owasp-llm:LLM01", "nist:AI-1", "atlas"])
def test_a_selector_that_names_no_entry_form_is_a_usage_error(
    repo: RepoBuilder, cli: Any, selector: str
) -> None:
    tagged_repository(repo)
    result = cli("list", "--tag", selector, cwd=repo.root)
    assert result.code == 2 and f"--tag {selector}:" in result.err


def test_the_bundled_repository_is_tagged_and_selectable(cli: Any) -> None:
    listed = cli(
        "list", "--tag", "owasp-llm:2025:LLM01", "--format", "json", "--repo", str(PROJECT_ROOT)
    ).json()
    assert [lve["path"] for lve in listed["lves"]] == [
        "repository/security/indirect_prompt_injection/bank_bill/openai--gpt-4o-mini",
        "repository/security/indirect_prompt_injection/page_send_email/openai--gpt-4o-mini",
        "repository/security/jailbreak/crescendo_lockpicking/meta--llama-3-8b-instruct",
        "repository/security/jailbreak/roleplay_lockpicking/meta--llama-3-8b-instruct",
        "repository/security/prompt_injection/system_secret/meta--llama-3-8b-instruct",
    ]
    tagged = sum(
        any(t["name"] in taxonomy.SCHEMES for t in json.loads(p.read_text()).get("tags", []))
        for p in (PROJECT_ROOT / "repository").rglob("test.json")
    )
    assert tagged == len(list((PROJECT_ROOT / "repository").rglob("test.json")))


@pytest.mark.parametrize(
    ("scheme", "given", "written"),
    [
        ("owasp-llm", "LLM01:2025", "2025:LLM01"),
        ("owasp-llm", "llm01:2025", "2025:LLM01"),
        ("owasp-agentic", "ASI01:2026", "2026:ASI01"),
        ("atlas", "aml.t0051.001", "AML.T0051.001"),
        ("cwe", "cwe-1426", "CWE-1426"),
        ("cwe", "1426", "CWE-1426"),
        ("owasp-llm", "2025:LLM01", "2025:LLM01"),
    ],
)
def test_publishers_forms_are_normalised(scheme: str, given: str, written: str) -> None:
    assert taxonomy.normalised(scheme, given) == written


def test_entries_are_named_cwes_from_the_shipped_list_and_sub_techniques_with_their_technique() -> None:
    assert taxonomy.name_of("cwe", "CWE-1426") == "Improper Validation of Generative AI Output"
    assert taxonomy.name_of("cwe", "CWE-79").startswith("Improper Neutralization of Input During Web Page")
    assert taxonomy.name_of("atlas", "AML.T0051.000") == "LLM Prompt Injection: Direct"
    assert taxonomy.name_of("atlas", "AML.T0051") == "LLM Prompt Injection"
    assert taxonomy.name_of("owasp-llm", "LLM01:2025") == "Prompt Injection"
    cwe = taxonomy.taxonomies()["cwe"]
    assert "The MITRE Corporation" in cwe["notice"] and len(next(iter(cwe["editions"].values()))) > 1000


def test_an_lve_tagged_in_a_publishers_form_is_selected_and_shown_normalised(
    repo: RepoBuilder, cli: Any
) -> None:
    repo.lve(
        "sec/injection",
        {"tags": [{"name": "owasp-llm", "value": "LLM01:2025"}, {"name": "cwe", "value": "1427"}]},
    )
    for selector in ("owasp-llm:2025:LLM01", "owasp-llm:LLM01:2025", "cwe:CWE-1427"):
        listed = cli("list", "--tag", selector, "--format", "json", cwd=repo.root).json()
        assert [lve["path"] for lve in listed["lves"]] == ["repository/sec/injection/openai--gpt-4o-mini"], (
            selector
        )


@pytest.mark.parametrize(
    ("selector", "tag"),
    [
        ("LLM01:2025", {"name": "owasp-llm", "value": "2025:LLM01"}),
        ("ASI01:2026", {"name": "owasp-agentic", "value": "2026:ASI01"}),
        ("AML.T0051.001", {"name": "atlas", "value": "AML.T0051.001"}),
        ("CWE-1426", {"name": "cwe", "value": "CWE-1426"}),
    ],
)
def test_a_publishers_id_alone_selects_and_tags(
    repo: RepoBuilder, cli: Any, selector: str, tag: dict
) -> None:
    """`lvegit list --tag LLM01:2025` was refused: only owasp-llm:LLM01:2025 and owasp-llm:2025:LLM01 were
    taken, though the id names one entry of one taxonomy."""
    repo.lve("sec/tagged", {"tags": [tag]})
    repo.lve("sec/other", {"tags": [{"name": "owasp-llm", "value": "2025:LLM09"}]})
    listed = cli("list", "--tag", selector, "--format", "json", cwd=repo.root)
    assert listed.code == 0, listed.err
    assert [lve["path"] for lve in listed.json()["lves"]] == ["repository/sec/tagged/openai--gpt-4o-mini"]
    made = cli("new", "sec/new", "--model", "m/x", "--tag", selector, "--no-interactive", cwd=repo.root)
    assert made.code == 0, made.err
    assert json.loads((repo.root / "repository/sec/new/m--x/test.json").read_text())["tags"][1] == tag
