"""lvegit.sandbox.privileges: what a worker started as root becomes."""

from __future__ import annotations

from lvegit.sandbox.privileges import WORKER_UID_BASE, WORKER_UID_SPAN, new_worker_uid


def test_each_worker_draws_a_uid_of_its_own_in_the_range_no_user_has() -> None:
    """Two workers that drew the same uid would share a thread limit; the draw spans 40 million uids, so a
    thousand draws collide about once in eighty runs (more than ten would mean the draw is broken)."""
    draws = [new_worker_uid() for _worker in range(1000)]
    assert all(WORKER_UID_BASE <= uid < WORKER_UID_BASE + WORKER_UID_SPAN for uid in draws)
    assert len(set(draws)) > 990
