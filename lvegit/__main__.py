from __future__ import annotations

from lvegit.cli import main

main()
