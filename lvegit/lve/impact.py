"""How much harm an LVE does when it reproduces (test.json's `impact`): the weight of its severity
(history/severity.py)."""

from __future__ import annotations

from typing import Final, Literal, get_args

ImpactLevel = Literal["low", "medium", "high", "critical"]
IMPACT_LEVELS: Final[tuple[ImpactLevel, ...]] = get_args(ImpactLevel)
