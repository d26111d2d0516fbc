"""Checkers: the interface a custom checker implements (`from lvegit.checkers import BaseChecker`).

The registry of lvegit's own checkers and the factory that builds an LVE's checker are in
lvegit.checkers.registry. This package loads the interface only when it is asked for: every sandboxed
worker imports the package, and a lambda worker's launcher needs none of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lvegit.checkers.base import BaseChecker, MultiRunBaseChecker

__all__ = ["BaseChecker", "MultiRunBaseChecker"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from lvegit.checkers import base

        return getattr(base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
