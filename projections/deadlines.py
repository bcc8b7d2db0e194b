"""The deadline worker: expire overdue interrupts, driven by the pending queue.

The queue says which interrupts look overdue; the thread's own events decide:
`Workflows.expire` records InterruptExpired only if the interrupt is still
pending and due, and the store's version check lets one worker win when two
try at once. So each expiry is recorded exactly once, however many workers run.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

import structlog

from domain.errors import ConcurrentUpdateError, ReducerUnavailableError
from domain.record.application import Workflows
from projections.database import Database
from projections.pending_approvals import QUEUE
from projections.timestamps import utc_text

log = structlog.get_logger()
_left: set[str] = set()  # interrupts this process could not read: warned about once


def expire_overdue(store: Workflows, db: Database, now: datetime | None = None) -> list[str]:
    """Record the expiry of every overdue interrupt; return the ids this call expired."""
    now = now or datetime.now(UTC)
    with db.transaction(write=False) as cursor:
        cursor.execute(
            f"SELECT thread_id, interrupt_id FROM {db.table(QUEUE)} "
            "WHERE due_by IS NOT NULL AND due_by <= %s ORDER BY due_by",
            (utc_text(now),),
        )
        overdue = cursor.fetchall()
    expired = []
    for thread_id, interrupt_id in overdue:
        try:
            if store.expire(thread_id, interrupt_id, now) is not None:
                expired.append(interrupt_id)
        except ConcurrentUpdateError:
            continue  # another worker (or a reviewer) got there first
        except ReducerUnavailableError as error:
            if interrupt_id not in _left:
                _left.add(interrupt_id)
                log.warning("overdue interrupt left", interrupt_id=interrupt_id, reason=str(error))
    return expired


class DeadlineWorker:
    """`expire_overdue`, run after a projector's pass at most once every `every` seconds.

    On PostgreSQL a pass follows every commit; the queue's overdue query (a
    transaction of its own) after each would cost as many statements as there are
    commits, when a deadline is a matter of the clock: an overdue interrupt is
    expired at most `every` seconds (the projector's poll) after its deadline.
    """

    def __init__(self, store: Workflows, db: Database, every: float) -> None:
        self.store = store
        self.db = db
        self.every = every
        self._last = float("-inf")

    def __call__(self) -> list[str]:
        """The ids this call expired (none when the last run is under `every` s old)."""
        now = time.monotonic()
        if now - self._last < self.every:
            return []
        self._last = now
        return expire_overdue(self.store, self.db)
