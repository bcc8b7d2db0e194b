"""Test help for runs in the store: a lease ended as if its runner had stopped renewing it."""

from __future__ import annotations

from service.run_store import RunStore


def expire(runs: RunStore, thread_id: str) -> None:
    """The thread's lease ends now, as if its runner had stopped renewing it."""
    with runs.db.transaction() as cursor:
        cursor.execute(
            f"UPDATE {runs.db.table('holdpoint_thread_leases')} SET expires_at = 0 "
            "WHERE thread_id = %s",
            (thread_id,),
        )
