"""lvegit disclosure: a reporter withholds, a maintainer grants a vendor and revokes them, and discloses."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lvegit.disclosure.withheld import open_payload
from lvegit.lve.repo import Repository

from builders import RepoBuilder, instance
from withholding import CANARY, CANARY_TEST, Keys, with_recipients


def test_withhold_grant_revoke_and_disclose_from_the_command_line(repo: RepoBuilder, cli: Any) -> None:
    keys = Keys()
    with_recipients(repo, keys.public(keys.maintainer))
    lve_dir = repo.lve(
        "privacy/leak", CANARY_TEST, instances={"i.jsonl": [instance(CANARY, False, a=1, b=2)]}
    )
    rel = "repository/privacy/leak/openai--gpt-4o-mini"
    key_file = repo.root.parent / "maintainer.txt"
    key_file.write_text(f"# the maintainers' key\n{keys.secret(keys.maintainer)}\n")
    outputs = []

    def run(*args: str) -> Any:
        result = cli(*args, "--repo", str(repo.root))
        outputs.append(result.out + result.err)
        return result

    withheld = run(
        "disclosure", "withhold", rel, "--description", "leaks a prompt", "--embargo-until", "2027-02-01"
    )
    assert withheld.code == 0, withheld.err
    assert withheld.out == f"{rel}: withheld for 1 reader(s); payload withheld until 2027-02-01\n"
    assert run("disclosure", "grant", rel, "--recipient", keys.public(keys.vendor)).code == 2  # no identity
    vendor = keys.public(keys.vendor)
    granted = run(
        "disclosure", "grant", rel, "--recipient", vendor, "--name", "Vendor", "--identity", str(key_file)
    )
    assert granted.out == f"{rel}: readable by 2 reader(s)\n"
    assert open_payload(Repository(repo.root), lve_dir, keys.vendor)[1].files  # the vendor reads it
    revoked = run("disclosure", "revoke", rel, "--recipient", vendor, "--identity", str(key_file))
    assert revoked.out == f"{rel}: readable by 1 reader(s)\n"
    disclosed = run("disclosure", "disclose", rel, "--identity", str(key_file))
    assert disclosed.code == 0 and "the payload matches the commitment" in disclosed.out
    assert CANARY not in "".join(outputs)
    checked = run("check", rel)
    assert checked.code == 0 and "ok; 1 reproduced" in checked.out


@pytest.mark.parametrize("date", ["2027-13-01", "soon"])
def test_withhold_refuses_a_date_that_is_none(repo: RepoBuilder, cli: Any, date: str) -> None:
    repo.lve("cat/a")
    result = cli(
        "disclosure", "withhold", "repository/cat/a/openai--gpt-4o-mini", "--description", "d",
        "--embargo-until", date, "--repo", str(repo.root),
    )  # fmt: skip
    assert result.code == 2 and "no date" in result.err


def test_show_gives_a_withheld_lves_abstract_and_its_embargo_only(repo: RepoBuilder, cli: Any) -> None:
    from lvegit.disclosure.withheld import withhold

    from withholding import ABSTRACT

    keys = Keys()
    with_recipients(repo, keys.public(keys.maintainer))
    lve_dir = repo.lve(
        "privacy/leak", CANARY_TEST, instances={"i.jsonl": [instance(CANARY, False, a=1, b=2)]}
    )
    withhold(Repository(repo.root), lve_dir, ABSTRACT)
    rel = "repository/privacy/leak/openai--gpt-4o-mini"
    shown = cli("show", rel, "--repo", str(repo.root))
    assert shown.code == 0, shown.err
    assert "description: leaks a system prompt" in shown.out
    assert "payload: payload withheld until 2027-01-31" in shown.out and "readers: maintainers" in shown.out
    document = cli("show", rel, "--format", "json", "--repo", str(repo.root)).json()
    assert document["reporter"] == "R. Porter" and document["checker"] == "LambdaChecker"
    assert CANARY not in shown.out + json.dumps(document)
