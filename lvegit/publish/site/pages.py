"""The process that writes a share of the site's LVE pages (see lvegit.publish.site.build): started
through lvegit.base.processes (lvegit's code, isolated, outside the repository, an allow-listed
environment), it reads its batches from stdin and writes what they gave to stdout, both pickled by the
lvegit process that started it."""

from __future__ import annotations

import os
import pickle
import sys

from lvegit.publish.site.build import lve_pages


def main() -> None:
    answer = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # what the pages' code prints goes to stderr, never into the answer
    batches = pickle.load(sys.stdin.buffer)
    try:
        written: tuple[str, object] = ("written", [lve_pages(batch) for batch in batches])
    except Exception as exc:  # given back whole: the parent raises it as if it were its own
        written = ("raised", exc)
    pickle.dump(written, answer)
    answer.close()


if __name__ == "__main__":
    main()
