"""Checkers: the interface a custom checker implements (`from lvegit.checkers import BaseChecker`).

The registry of lvegit's own checkers and the factory that builds an LVE's checker are in
lvegit.checkers.registry; this package keeps its import light, since every sandboxed worker and every
command loads it.
"""

from __future__ import annotations

from lvegit.checkers.base import BaseChecker, MultiRunBaseChecker

__all__ = ["BaseChecker", "MultiRunBaseChecker"]
