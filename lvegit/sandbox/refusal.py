"""What lvegit says where the sandbox does not hold: contributed code is not run, and the ways out."""

from __future__ import annotations


def unconfined_refusal(isolation: list[str], what: str = "custom checker code is") -> str:
    """Why contributed code (`what`) is not run where the sandbox does not hold, and the ways out."""
    missing = "; ".join(line for line in isolation if "unavailable" in line or "still held" in line)
    return (
        f"{what} not run: the sandbox does not hold on this machine "
        f"({missing or 'see lvegit sandbox'}). "
        "Run lvegit in its published container image, or on a Linux machine that allows user namespaces or "
        "Landlock (see lvegit sandbox), or set LVEGIT_UNCONFINED_CHECKERS=1 to accept the risk of running it "
        "with your user's rights"
    )
