from __future__ import annotations

import pytest

from lvegit.checkers import safe_regex


@pytest.fixture(autouse=True)
def quick_regex_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """Catastrophic patterns hit the limit in tests; a short one keeps the suite fast."""
    monkeypatch.setattr(safe_regex, "REGEX_TIMEOUT_SECONDS", 0.2)
