"""Fixtures of the disclosure tests: keys and a clear LVE to withhold, in a real repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from builders import RepoBuilder
from withholding import CANARY, CANARY_TEST, Keys, with_recipients


@pytest.fixture
def keys() -> Keys:
    return Keys()


@pytest.fixture
def private_lve(repo: RepoBuilder, keys: Keys) -> Path:
    """A clear LVE with the canary in every payload field, in a repository with one recipient."""
    with_recipients(repo, keys.public(keys.maintainer))
    return repo.lve(
        "privacy/leak",
        CANARY_TEST,
        instances={"run.jsonl": [{"args": {"a": 1, "b": 2}, "response": f"{CANARY}", "passed": False}]},
        files={"README.md": f"# {CANARY}\n"},
    )
