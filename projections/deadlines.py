"""The deadline worker: expire overdue interrupts, driven by the pending queue.

The queue says which interrupts look overdue; the thread's own events decide:
`Workflows.expire` records InterruptExpired only if the interrupt is still
pending and due, and the store's version check lets one worker win when two
try at once. So each expiry is recorded exactly once, however many workers run.
"""

from __future__ import annotations

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
