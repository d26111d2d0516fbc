"""What the disclosure tests share: real age identities (pyrage), the canary, withheld LVEs."""

from __future__ import annotations

from typing import Any

import pytest

from builders import RepoBuilder

# In every payload field of the LVEs these tests withhold: no public output may hold it.
CANARY = "CANARY-9d2e7b"
CANARY_TEST = {
    "description": f"private description {CANARY}",
    "prompt": [{"role": "user", "content": f"{CANARY} Compute {{a}} + {{b}}."}],
    "checker_args": {"checker_name": "LambdaChecker", "func": f"lambda r, a, b: '{CANARY}' != r"},
    "author": f"author {CANARY}",
}


class Keys:
    """A maintainer's identity (the repository's recipient) and a vendor's."""

    def __init__(self) -> None:
        pyrage = pytest.importorskip("pyrage")  # the `disclosure` extra (in `test`)
        self.maintainer = pyrage.x25519.Identity.generate()
        self.vendor = pyrage.x25519.Identity.generate()

    def public(self, identity: Any) -> str:
        return str(identity.to_public())

    def secret(self, identity: Any) -> str:
        return str(identity)


def with_recipients(repo: RepoBuilder, *public: str) -> None:
    tables = "".join(f'[[recipients]]\nkey = "{key}"\nname = "maintainers"\n' for key in public)
    (repo.root / "disclosure.toml").write_text(tables)


ABSTRACT = {"description": "leaks a system prompt", "embargo_until": "2027-01-31", "reporter": "R. Porter"}
