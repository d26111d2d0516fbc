"""The disclosure identity of a trusted job or a reader: an age secret key, from a file (--identity) or the
LVEGIT_DISCLOSURE_IDENTITY variable. lvegit takes the variable out of its own environment as it starts, so
that no process it (or a library it calls) starts inherits it, and keeps the key in memory only."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from lvegit.base.errors import UsageError
from lvegit.base.files import FileProblem, read_text

VARIABLE = "LVEGIT_DISCLOSURE_IDENTITY"
_taken: list[str] = []  # the variable's value, once taken out of the environment


def take_from_environment() -> None:
    """Move LVEGIT_DISCLOSURE_IDENTITY from os.environ into this module (first thing, each time the CLI
    runs: what an earlier run in the same process took is dropped)."""
    value = os.environ.pop(VARIABLE, None)
    _taken[:] = [value] if value else []


def load_identity(file: Path | None, required: bool = False) -> Any | None:
    """The identity of `file`, else of the variable; None where neither gives one (a UsageError when
    `required`). The key never appears in a message."""
    from lvegit.disclosure.envelope import parse_identity

    if file is not None:
        try:
            text = read_text(file, 64 * 1024, within=file.parent, base_name="its folder")
        except FileProblem as exc:
            raise UsageError(f"--identity {file}: {exc}") from None
        return parse_identity(text, f"--identity {file}")
    if _taken:
        return parse_identity(_taken[0], VARIABLE)
    if required:
        raise UsageError(f"this needs a disclosure identity: --identity FILE or {VARIABLE}")
    return None
