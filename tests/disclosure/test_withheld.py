from __future__ import annotations

import json
from pathlib import Path

import pytest

from lvegit.base.errors import LVEError, UsageError
from lvegit.disclosure.envelope import encrypt
from lvegit.disclosure.withheld import (
    disclose,
    open_payload,
    set_readers,
    validate_withheld,
    withheld_dirs,
    withhold,
)
from lvegit.lve.repo import Repository

from builders import RepoBuilder
from withholding import ABSTRACT, CANARY, Keys, with_recipients


def _folder_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


def test_withholding_leaves_an_abstract_and_an_envelope_and_no_payload_byte(
    repo: RepoBuilder, keys: Keys, private_lve: Path
) -> None:
    clear = {p.relative_to(private_lve): p.read_bytes() for p in private_lve.rglob("*") if p.is_file()}
    repository = Repository(repo.root)
    abstract = withhold(repository, private_lve, ABSTRACT)
    assert sorted(p.name for p in private_lve.iterdir()) == ["payload.age", "withheld.json"]
    assert CANARY.encode() not in _folder_bytes(private_lve)
    assert abstract.get("model") == "openai/gpt-4o-mini" and abstract.get("checker") == "LambdaChecker"
    assert withheld_dirs(repository) == [private_lve]
    assert validate_withheld(repository, private_lve)[1].items == []
    _, opened = open_payload(repository, private_lve, keys.maintainer)
    assert {Path(k): v for k, v in opened.files.items()} == {
        k: v for k, v in clear.items() if k.name != "README.md"
    }


def test_a_vendor_granted_reads_it_and_loses_new_versions_once_revoked(
    repo: RepoBuilder, keys: Keys, private_lve: Path
) -> None:
    repository = Repository(repo.root)
    before = withhold(repository, private_lve, ABSTRACT).get("commitment").sha256
    with pytest.raises(LVEError, match="cannot be opened"):
        open_payload(repository, private_lve, keys.vendor)
    vendor = keys.public(keys.vendor)
    after = set_readers(repository, private_lve, keys.maintainer, [(vendor, "Vendor")], [])
    assert after.readers == [keys.public(keys.maintainer), vendor]
    assert after.get("commitment").sha256 == before  # the same payload: the commitment stands
    assert open_payload(repository, private_lve, keys.vendor)[1].files
    assert validate_withheld(repository, private_lve)[1].items == []
    with pytest.raises(UsageError, match="stay readers"):
        set_readers(repository, private_lve, keys.maintainer, [], [keys.public(keys.maintainer)])
    set_readers(repository, private_lve, keys.maintainer, [], [vendor])
    with pytest.raises(LVEError, match="cannot be opened"):
        open_payload(repository, private_lve, keys.vendor)


def test_disclosure_verifies_the_commitment_and_makes_an_ordinary_lve(
    repo: RepoBuilder, keys: Keys, private_lve: Path
) -> None:
    repository = Repository(repo.root)
    test_json = (private_lve / "test.json").read_bytes()
    withhold(repository, private_lve, ABSTRACT)
    disclose(repository, private_lve, keys.maintainer)
    assert (private_lve / "test.json").read_bytes() == test_json
    assert not (private_lve / "withheld.json").exists() and not (private_lve / "payload.age").exists()
    assert withheld_dirs(repository) == []


def test_a_payload_swapped_for_another_fails_its_commitment_and_nothing_is_written(
    repo: RepoBuilder, keys: Keys, private_lve: Path
) -> None:
    repository = Repository(repo.root)
    withhold(repository, private_lve, ABSTRACT)
    other = repo.lve("other/add")
    withhold(repository, other, ABSTRACT)
    (private_lve / "payload.age").write_bytes((other / "payload.age").read_bytes())
    with pytest.raises(LVEError, match=r"privacy/leak/.*/payload\.age: the payload does not match"):
        disclose(repository, private_lve, keys.maintainer)
    assert sorted(p.name for p in private_lve.iterdir()) == ["payload.age", "withheld.json"]


def test_validation_without_a_key_names_each_file_that_breaks_the_envelope(
    repo: RepoBuilder, keys: Keys, private_lve: Path
) -> None:
    repository = Repository(repo.root)
    withhold(repository, private_lve, ABSTRACT)
    (private_lve / "test.json").write_text(json.dumps({"prompt": CANARY}))
    (private_lve / "instances").mkdir()
    (private_lve / "payload.age").write_bytes(
        encrypt(b"x", [keys.public(keys.maintainer), keys.public(keys.vendor)])
    )
    rel = repository.relative(private_lve)
    found = {(p.file, p.field): p.message for p in validate_withheld(repository, private_lve)[1].errors}
    assert "would be published in clear" in found[(f"{rel}/test.json", "")]
    assert (f"{rel}/instances", "") in found
    assert found[(f"{rel}/withheld.json", "readers")] == (
        "payload.age is encrypted to 2 recipient(s), the abstract lists 1"
    )
    assert all(CANARY not in message for message in found.values())


def test_the_repository_recipients_must_all_be_readers(
    repo: RepoBuilder, keys: Keys, private_lve: Path
) -> None:
    repository = Repository(repo.root)
    withhold(repository, private_lve, ABSTRACT)
    with_recipients(repo, keys.public(keys.maintainer), keys.public(keys.vendor))
    [problem] = validate_withheld(repository, private_lve)[1].errors
    assert problem.field == "readers" and keys.public(keys.vendor) in problem.message
