"""Withheld LVEs in the repository: where they are, what validation checks of them without any key, and
what a holder of a disclosure identity does with them (withhold, grant, revoke, open, disclose).

A withheld LVE is a folder under repository/ holding exactly two files: withheld.json (the public
abstract) and payload.age (the LVE's files as a canonical tar, encrypted to the abstract's readers). It
has no test.json, so every command that reads LVEs passes it over unless it asks for withheld ones.
"""

from __future__ import annotations

import datetime
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lvegit.base.errors import LVEError, UsageError
from lvegit.base.files import FileProblem, read_bytes, walk
from lvegit.disclosure.abstract import Abstract, abstract_json, read_abstract
from lvegit.disclosure.envelope import (
    MAX_ENVELOPE_BYTES,
    EnvelopeError,
    decrypt,
    encrypt,
    recipient_count,
)
from lvegit.disclosure.payload import (
    PAYLOAD_FILE,
    README_FILE,
    commitment,
    pack,
    payload_files,
    unpack,
    write_files,
)
from lvegit.disclosure.recipients import CONFIG_FILE, repository_recipients
from lvegit.lve.problems import Problems
from lvegit.lve.repo import TEST_FILE, WITHHELD_FILE, Repository, is_withheld

if TYPE_CHECKING:
    from pyrage import x25519

WITHHELD_FILES = (WITHHELD_FILE, PAYLOAD_FILE)


def withheld_dirs(repo: Repository, under: Path | None = None) -> list[Path]:
    """Every withheld LVE folder below `under` (default: all of repository/), sorted."""
    return [d for d in repo.lve_dirs(under, withheld=True) if is_withheld(d)]


def withheld_note(abstract: Abstract | None) -> str:
    """What public outputs say in place of a withheld payload."""
    return f"payload withheld until {abstract.embargo_until if abstract else 'disclosure'}"


def _envelope(lve_dir: Path) -> bytes:
    return read_bytes(lve_dir / PAYLOAD_FILE, MAX_ENVELOPE_BYTES, within=lve_dir)


def validate_withheld(repo: Repository, lve_dir: Path) -> tuple[Abstract | None, Problems]:
    """A withheld LVE checked without any key: its abstract, that its folder holds nothing in clear, and
    that its envelope is a well-formed age file encrypted to as many recipients as the abstract lists,
    the repository's recipients among them. (An X25519 stanza does not say whom it is for: that the
    envelope is encrypted to exactly those keys is what only a reader can confirm.)"""
    rel = repo.relative(lve_dir)
    problems = Problems(f"{rel}/{WITHHELD_FILE}")
    abstract = read_abstract(lve_dir, problems)
    for folder, folders, others in walk(lve_dir):
        for name in sorted([*folders, *others]):
            path = (folder / name).relative_to(lve_dir).as_posix()
            if path not in WITHHELD_FILES:
                problems.error(
                    "",
                    f"a withheld LVE holds {WITHHELD_FILE} and {PAYLOAD_FILE} only: '{path}' would be "
                    "published in clear (withhold the LVE again with lvegit withhold, or remove it)",
                    file=f"{rel}/{path}",
                )
        folders[:] = []
    envelope = f"{rel}/{PAYLOAD_FILE}"
    try:
        count = recipient_count(_envelope(lve_dir))
    except (FileProblem, EnvelopeError) as exc:
        problems.error("", str(exc), file=envelope)
        return abstract, problems
    readers = abstract.readers if abstract else []
    if abstract is not None and "readers" in abstract.values and count != len(readers):
        problems.error(
            "readers",
            f"{PAYLOAD_FILE} is encrypted to {count} recipient(s), the abstract lists {len(readers)}",
        )
    try:
        missing = [r.key for r in repository_recipients(repo) if r.key not in readers]
    except LVEError as exc:
        problems.error("", str(exc), file=CONFIG_FILE)
        return abstract, problems
    if abstract is not None and "readers" in abstract.values and missing:
        problems.error(
            "readers",
            f"the repository's disclosure recipients must be readers ({CONFIG_FILE}); missing: "
            + ", ".join(missing),
        )
    return abstract, problems


def _today() -> str:
    return datetime.date.today().isoformat()


def withhold(repo: Repository, lve_dir: Path, fields: dict[str, Any]) -> Abstract:
    """Encrypt a clear LVE's files to the repository's recipients, write its abstract from `fields`
    (description, embargo_until, ...; model and checker are read from test.json where not given), and
    remove the clear files. Nothing is removed before the envelope and the abstract are written."""
    from lvegit.base.files import parse_json
    from lvegit.lve.repo import checker_named_in

    rel = repo.relative(lve_dir)
    if is_withheld(lve_dir):
        raise UsageError(f"{rel}: already withheld")
    try:
        files = payload_files(lve_dir)
    except FileProblem as exc:
        raise LVEError(f"{rel}: {exc}") from None
    if TEST_FILE not in files:
        raise UsageError(f"{rel}: no {TEST_FILE}: not an LVE")
    test = parse_json(files[TEST_FILE].decode("utf-8"))
    named = checker_named_in(files[TEST_FILE])
    custom = any(name.startswith("checker/") for name in files)
    recipients = repository_recipients(repo)
    readers = [{"key": r.key, "name": r.name} for r in recipients]
    tar = pack(files)
    values = {
        "model": test.get("model") if isinstance(test, dict) else None,
        "checker": "custom" if custom else named[0] if named else None,
        "tags": test.get("tags", []) if isinstance(test, dict) else [],
        "withheld_on": _today(),
        **{k: v for k, v in fields.items() if v is not None},
        "readers": readers,
        "commitment": {"sha256": commitment(tar)},
    }
    text = abstract_json(values)  # refused before anything is written
    sealed = encrypt(tar, [r.key for r in recipients])
    (lve_dir / PAYLOAD_FILE).write_bytes(sealed)
    (lve_dir / WITHHELD_FILE).write_text(text, encoding="utf-8")
    for name in [*files, README_FILE]:
        (lve_dir / name).unlink(missing_ok=True)
    for folder, _folders, _others in sorted(walk(lve_dir), key=lambda entry: -len(entry[0].parts)):
        if folder != lve_dir and not any(folder.iterdir()):
            folder.rmdir()
    problems = Problems(f"{rel}/{WITHHELD_FILE}")
    abstract = read_abstract(lve_dir, problems)
    assert abstract is not None
    return abstract


@dataclass(frozen=True)
class Opened:
    """A withheld payload as its reader sees it: the files, the nonce and the canonical tar's bytes."""

    files: dict[str, bytes]
    tar: bytes


def open_payload(
    repo: Repository, lve_dir: Path, identity: x25519.Identity, validated: Abstract | None = None
) -> tuple[Abstract, Opened]:
    """Decrypt a withheld LVE's payload in memory and check it: a valid abstract, an envelope that opens,
    a tar of plain files only, and the commitment the abstract states. Errors name the LVE's file.
    `validated`: the abstract, where the caller has validated the LVE already (validate_withheld)."""
    rel = repo.relative(lve_dir)
    abstract = validated
    if abstract is None:
        abstract, problems = validate_withheld(repo, lve_dir)
        blocking = [p for p in problems.errors if p.file != f"{rel}/{WITHHELD_FILE}" or p.field != "readers"]
        if abstract is None or blocking:
            first = (blocking or problems.errors)[0]
            raise LVEError(f"{first.file}: {first.what}")
    try:
        tar = decrypt(_envelope(lve_dir), identity)
        files, _nonce = unpack(tar)
    except (FileProblem, EnvelopeError) as exc:
        raise LVEError(f"{rel}/{PAYLOAD_FILE}: {exc}") from None
    stated = abstract.get("commitment")
    if stated is None or commitment(tar) != stated.sha256:
        raise LVEError(
            f"{rel}/{PAYLOAD_FILE}: the payload does not match the commitment in {WITHHELD_FILE} "
            "(it is not the payload that was withheld)"
        )
    return abstract, Opened(files, tar)


def set_readers(
    repo: Repository,
    lve_dir: Path,
    identity: x25519.Identity,
    add: list[tuple[str, str | None]],
    drop: list[str],
) -> Abstract:
    """Encrypt the same payload (the same bytes: the commitment stands) to the readers with `add` added
    and `drop` removed; the repository's own recipients cannot be dropped."""
    abstract, opened = open_payload(repo, lve_dir, identity)
    rel = repo.relative(lve_dir)
    own = {r.key for r in repository_recipients(repo)}
    if own & set(drop):
        raise UsageError(f"{rel}: the repository's disclosure recipients ({CONFIG_FILE}) stay readers")
    readers = [r for r in abstract.get("readers", []) if r.key not in drop]
    unknown = set(drop) - {r.key for r in abstract.get("readers", [])}
    if unknown:
        raise UsageError(f"{rel}: not a reader: {', '.join(sorted(unknown))}")
    kept: list[dict[str, str | None]] = [{"key": r.key, "name": r.name} for r in readers]
    for key, name in add:
        if key in (r["key"] for r in kept):
            raise UsageError(f"{rel}: {key} is a reader already")
        kept.append({"key": key, "name": name})
    text = abstract_json({**abstract.values, "readers": kept})
    sealed = encrypt(opened.tar, [str(r["key"]) for r in kept])
    (lve_dir / PAYLOAD_FILE).write_bytes(sealed)
    (lve_dir / WITHHELD_FILE).write_text(text, encoding="utf-8")
    return read_abstract(lve_dir, Problems(f"{rel}/{WITHHELD_FILE}")) or abstract


def disclose(repo: Repository, lve_dir: Path, identity: x25519.Identity) -> Abstract:
    """Write the payload's files into the LVE folder, verified against the commitment, and remove the
    envelope and the abstract: the LVE becomes an ordinary one. The envelope stays until every file is
    written."""
    abstract, opened = open_payload(repo, lve_dir, identity)
    try:
        write_files(lve_dir, opened.files)
    except EnvelopeError as exc:
        raise LVEError(f"{repo.relative(lve_dir)}: {exc}") from None
    for name in WITHHELD_FILES:
        (lve_dir / name).unlink()
    return abstract


def scratch_copy(
    repo: Repository,
    lve_dir: Path,
    identity: x25519.Identity,
    scratch: Path,
    validated: Abstract | None = None,
) -> Path:
    """Decrypt a withheld LVE into `scratch` (a private folder the caller made and removes), a repository
    of clear forms at the same relative paths with the repository's routing file; the folder written.
    `validated`: as for open_payload."""
    from lvegit.lve.routing_file import ROUTING_FILES

    (scratch / "repository").mkdir(parents=True, exist_ok=True, mode=0o700)
    for name in ROUTING_FILES:
        source = repo.root / name
        if source.is_file() and not source.is_symlink() and not (scratch / name).exists():
            shutil.copyfile(source, scratch / name)
    _abstract, opened = open_payload(repo, lve_dir, identity, validated)
    target = scratch / repo.relative(lve_dir)
    target.mkdir(parents=True, mode=0o700)
    write_files(target, opened.files)
    return target


def public_view(repo: Repository, lve_dir: Path) -> dict[str, Any]:
    """What anyone may see of a withheld LVE: its abstract's valid fields (who can read the payload by
    name, not key) and when its payload is to be disclosed."""
    rel = repo.relative(lve_dir)
    abstract = read_abstract(lve_dir, Problems(f"{rel}/{WITHHELD_FILE}"))
    values = abstract.values if abstract is not None else {}
    tags = [{"name": tag.name, "value": tag.value} for tag in values.get("tags", [])]
    return {
        "path": rel,
        **{name: values.get(name) for name in ("description", "model", "checker")},
        "tags": tags,
        **{
            name: values.get(name)
            for name in ("withheld_on", "embargo_until", "vendor_contacted_on", "reporter")
        },
        "readers": [reader.name or "(unnamed)" for reader in values.get("readers", [])],
        "commitment": values["commitment"].sha256 if "commitment" in values else None,
        "payload": withheld_note(abstract),
    }
