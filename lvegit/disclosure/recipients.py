"""The repository's disclosure recipients: the age public keys in `disclosure.toml` beside `.lverepo`, to
which every withheld payload is encrypted (and that the Action checks each envelope against)."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass

from lvegit.base.errors import LVEError
from lvegit.base.files import FileProblem, read_text
from lvegit.disclosure.envelope import is_recipient
from lvegit.lve.repo import Repository

CONFIG_FILE = "disclosure.toml"


@dataclass(frozen=True)
class Recipient:
    key: str
    name: str | None = None


def repository_recipients(repo: Repository) -> list[Recipient]:
    """The recipients `disclosure.toml` lists (`[[recipients]]` tables with `key` and `name`); an
    LVEError naming the file where it is missing or wrong."""
    try:
        text = read_text(repo.root / CONFIG_FILE, 64 * 1024, within=repo.root, base_name="the repository")
    except FileProblem as exc:
        raise LVEError(
            f"{CONFIG_FILE}: {exc} (a repository that takes withheld LVEs lists its disclosure "
            "recipients there)"
        ) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise LVEError(f"{CONFIG_FILE}: not TOML: {exc}") from None
    tables = data.get("recipients")
    if not isinstance(tables, list) or not tables:
        raise LVEError(f"{CONFIG_FILE}: needs [[recipients]] tables, each with an age public key `key`")
    found: list[Recipient] = []
    for index, table in enumerate(tables):
        key = table.get("key") if isinstance(table, dict) else None
        name = table.get("name") if isinstance(table, dict) else None
        if not isinstance(key, str) or not is_recipient(key):
            raise LVEError(
                f"{CONFIG_FILE}: recipients[{index}].key must be an age X25519 public key (age1...)"
            )
        if name is not None and not isinstance(name, str):
            raise LVEError(f"{CONFIG_FILE}: recipients[{index}].name must be text")
        if key in (r.key for r in found):
            raise LVEError(f"{CONFIG_FILE}: recipients[{index}].key is listed twice")
        found.append(Recipient(key, name))
    return found
