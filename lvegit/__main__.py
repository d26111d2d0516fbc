from __future__ import annotations

from lvegit.cli import main

if __name__ == "__main__":  # run, not imported
    main()
