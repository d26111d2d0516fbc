"""Point action.yml at a prebuilt image by digest: `pin_action_image.py ghcr.io/OWNER/lvegit@sha256:HEX`.

The release workflow runs this on a commit of its own after pushing the image, so that a release tag runs the
image it built (no build in users' jobs) while main keeps building from the Dockerfile."""

from __future__ import annotations

import re
import sys
from pathlib import Path

IMAGE = re.compile(r"[a-z0-9][a-z0-9._/-]*@sha256:[0-9a-f]{64}")
RUNS_IMAGE = re.compile(r"^  image: .*$", re.MULTILINE)


def pin(action: str, image: str) -> str:
    if not IMAGE.fullmatch(image):
        raise ValueError(f"not an image reference by digest (NAME@sha256:HEX): {image!r}")
    if len(RUNS_IMAGE.findall(action)) != 1:
        raise ValueError("action.yml has no single `  image:` line under runs")
    return RUNS_IMAGE.sub(f"  image: docker://{image}", action)


def main(argv: list[str]) -> int:
    action = Path("action.yml")
    try:
        action.write_text(pin(action.read_text(), argv[1]))
    except (IndexError, ValueError) as exc:
        print(f"pin_action_image: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
