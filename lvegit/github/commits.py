"""Making sure the commits to compare are in the checkout (actions/checkout fetches one commit by default)."""

from __future__ import annotations

from lvegit.git.vcs import GitCheckout


def ensure_history(checkout: GitCheckout, *revisions: str) -> list[str]:
    """Fetch what is missing: the revisions themselves, and the history between them when the clone is
    shallow (the merge base must be reachable). Returns what was done, for the log."""
    done = []
    missing = [rev for rev in revisions if not checkout.has_commit(rev)]
    if missing:
        checkout.run(
            "fetch",
            "--no-tags",
            "--quiet",
            "--end-of-options",
            "origin",
            *missing,
            failure=f"cannot fetch {', '.join(missing)} from origin",
            fetching=True,
        )
        done.append(f"fetched {', '.join(r[:12] for r in missing)}")
    if checkout.is_shallow():
        checkout.run(
            "fetch",
            "--no-tags",
            "--quiet",
            "--unshallow",
            "origin",
            failure="cannot deepen the shallow clone",
            fetching=True,
        )
        done.append("fetched the full history of the shallow clone")
    return done
