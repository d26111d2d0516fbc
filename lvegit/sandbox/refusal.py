"""What lvegit says where the sandbox does not hold: contributed code is not run, and the step that fits
the cause the worker found."""

from __future__ import annotations

UNCONFINED = "set LVEGIT_UNCONFINED_CHECKERS=1 to accept the risk of running it with your user's rights"


def ways_out(isolation: list[str]) -> str:
    """The steps that fix what the worker's layers (`isolation`, one line each) say is missing here."""

    def found(start: str, word: str = "") -> bool:
        return any(layer.startswith(start) and word in layer for layer in isolation)

    steps = []
    if found("seccomp: unavailable", "libseccomp"):
        steps.append("install libseccomp (e.g. apt-get install libseccomp2)")
    if found("namespaces: none") and found("landlock: unavailable"):
        steps.append("use a Linux machine that allows user namespaces or Landlock")
    return "; ".join(steps or ["see lvegit sandbox"])


def unconfined_refusal(isolation: list[str], what: str = "custom checker code is") -> str:
    """Why contributed code (`what`) is not run where the sandbox does not hold, and the way out."""
    missing = "; ".join(line for line in isolation if "unavailable" in line or "still held" in line)
    return (
        f"{what} not run: the sandbox does not hold on this machine "
        f"({missing or 'see lvegit sandbox'}). To run it: {ways_out(isolation)} (or {UNCONFINED})"
    )
