"""Making sure the commits to compare are in the checkout (actions/checkout fetches one commit by default)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from lvegit.errors import UsageError


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)


def has_commit(root: Path, sha: str) -> bool:
    return _git(root, "cat-file", "-e", f"{sha}^{{commit}}").returncode == 0


def ensure_history(root: Path, *revisions: str) -> list[str]:
    """Fetch what is missing: the revisions themselves, and the history between them when the clone is
    shallow (the merge base must be reachable). Returns what was done, for the log."""
    done = []
    missing = [rev for rev in revisions if not has_commit(root, rev)]
    if missing:
        result = _git(root, "fetch", "--no-tags", "--quiet", "origin", *missing)
        if result.returncode != 0:
            raise UsageError(f"cannot fetch {', '.join(missing)} from origin: {result.stderr.strip()}")
        done.append(f"fetched {', '.join(r[:12] for r in missing)}")
    if _git(root, "rev-parse", "--is-shallow-repository").stdout.strip() == "true":
        result = _git(root, "fetch", "--no-tags", "--quiet", "--unshallow", "origin")
        if result.returncode != 0:
            raise UsageError(f"cannot deepen the shallow clone: {result.stderr.strip()}")
        done.append("fetched the full history of the shallow clone")
    return done
