"""`python -m lvegit.commands.reference docs/reference.md`: the reference of lvegit's CLI, written to the
file named."""

from __future__ import annotations

import sys
from pathlib import Path

from lvegit.cli import cli
from lvegit.commands.reference import page

if __name__ == "__main__":  # run, not imported
    Path(sys.argv[1]).write_text(page(cli), encoding="utf-8")
