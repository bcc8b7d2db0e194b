"""Which thread an interrupt belongs to, from the read models.

An interrupt id names no thread, so a decision by interrupt id looks it up:
first in the approval queue (open interrupts), then in the oversight log
(every interrupt ever raised, whatever became of it). A miss may only mean
the read models have not caught up, so the caller waits for them and asks
again before it answers 404.
"""

from __future__ import annotations

from projections.database import Database
from projections.oversight import INTERRUPTS
from projections.pending_approvals import QUEUE


def thread_of_interrupt(db: Database, interrupt_id: str) -> str | None:
    with db.transaction(write=False) as cursor:
        for table in (QUEUE, INTERRUPTS):
            cursor.execute(
                f"SELECT thread_id FROM {db.table(table)} WHERE interrupt_id = %s", (interrupt_id,)
            )
            row = cursor.fetchone()
            if row is not None:
                return str(row[0])
    return None
