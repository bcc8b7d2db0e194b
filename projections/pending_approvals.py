"""The pending-approval queue: one row per open interrupt.

A row appears when an interrupt is raised and goes when it is answered,
superseded (the node asked anew) or its thread is cancelled. The queue is
read in a stable order, oldest first (raised_at, then interrupt id), with a
keyset cursor, so pages neither skip nor repeat rows while the queue moves.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from domain.thread import WorkflowThread
from projections.database import Cursor, Database
from projections.paging import keyset_page
from projections.runner import Projection
from projections.timestamps import parse_utc_text, utc_text, utc_text_or_none

QUEUE = "holdpoint_pending_approvals"
GRAPHS = "holdpoint_pending_threads"


class PendingApprovalsProjection(Projection):
    name = "pending_approvals"
    event_classes = (
        WorkflowThread.ThreadStarted,
        WorkflowThread.ThreadForked,
        WorkflowThread.InterruptRaised,
        WorkflowThread.InterruptResumed,
        WorkflowThread.InterruptExpired,
        WorkflowThread.ThreadCancelled,
    )

    def create_tables(self, cursor: Cursor, db: Database) -> None:
        cursor.execute(
            f"CREATE TABLE IF NOT EXISTS {db.table(QUEUE)} ("
            "interrupt_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL, graph_id TEXT NOT NULL, "
            "node TEXT NOT NULL, idx INTEGER NOT NULL, payload TEXT NOT NULL, "
            "raised_at TEXT NOT NULL, required_role TEXT, due_by TEXT, assigned_to TEXT, "
            "position BIGINT NOT NULL)"
        )
        cursor.execute(
            f"CREATE INDEX IF NOT EXISTS {QUEUE}_order "
            f"ON {db.table(QUEUE)} (raised_at, interrupt_id)"
        )
        cursor.execute(
            f"CREATE INDEX IF NOT EXISTS {QUEUE}_thread ON {db.table(QUEUE)} (thread_id)"
        )
        cursor.execute(  # the queue of one graph, in order
            f"CREATE INDEX IF NOT EXISTS {QUEUE}_graph "
            f"ON {db.table(QUEUE)} (graph_id, raised_at, interrupt_id)"
        )
        cursor.execute(
            f"CREATE TABLE IF NOT EXISTS {db.table(GRAPHS)} "
            "(originator_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL, graph_id TEXT NOT NULL)"
        )

    def clear(self, cursor: Cursor, db: Database) -> None:
        cursor.execute(f"DELETE FROM {db.table(QUEUE)}")
        cursor.execute(f"DELETE FROM {db.table(GRAPHS)}")

    def apply(self, event: Any, position: int, cursor: Cursor, db: Database) -> None:
        queue = db.table(QUEUE)
        if isinstance(event, WorkflowThread.ThreadStarted | WorkflowThread.ThreadForked):
            cursor.execute(
                f"INSERT INTO {db.table(GRAPHS)} (originator_id, thread_id, graph_id) "
                "VALUES (%s, %s, %s)",
                (event.originator_id.hex, event.thread_id, event.graph_id),
            )
        elif isinstance(event, WorkflowThread.InterruptRaised):
            cursor.execute(
                f"DELETE FROM {queue} WHERE interrupt_id IN (SELECT q.interrupt_id FROM {queue} q "
                f"JOIN {db.table(GRAPHS)} t ON t.thread_id = q.thread_id "
                "WHERE t.originator_id = %s AND q.node = %s AND q.idx = %s)",
                (event.originator_id.hex, event.node, event.index),
            )
            cursor.execute(
                f"INSERT INTO {queue} (interrupt_id, thread_id, graph_id, node, idx, payload, "
                "raised_at, required_role, due_by, position) "
                f"SELECT %s, thread_id, graph_id, %s, %s, %s, %s, %s, %s, %s "
                f"FROM {db.table(GRAPHS)} WHERE originator_id = %s",
                (
                    event.interrupt_id,
                    event.node,
                    event.index,
                    json.dumps(event.value),
                    utc_text(event.timestamp),
                    event.required_role,
                    utc_text_or_none(event.due_by),
                    position,
                    event.originator_id.hex,
                ),
            )
        elif isinstance(event, WorkflowThread.InterruptExpired):
            if event.rule["action"] == "escalate":
                cursor.execute(
                    f"UPDATE {queue} SET required_role = %s, due_by = %s WHERE interrupt_id = %s",
                    (event.rule["role"], utc_text_or_none(event.new_due_by), event.interrupt_id),
                )
            else:
                cursor.execute(
                    f"DELETE FROM {queue} WHERE interrupt_id = %s", (event.interrupt_id,)
                )
        elif isinstance(event, WorkflowThread.InterruptResumed):
            cursor.execute(f"DELETE FROM {queue} WHERE interrupt_id = %s", (event.interrupt_id,))
        elif isinstance(event, WorkflowThread.ThreadCancelled):
            cursor.execute(
                f"DELETE FROM {queue} WHERE thread_id IN "
                f"(SELECT thread_id FROM {db.table(GRAPHS)} WHERE originator_id = %s)",
                (event.originator_id.hex,),
            )


@dataclass(frozen=True)
class PendingApproval:
    interrupt_id: str
    thread_id: str
    graph_id: str
    node: str
    payload: Any
    raised_at: str
    age_seconds: float
    required_role: str | None
    due_by: str | None
    assigned_to: str | None


@dataclass(frozen=True)
class ApprovalsPage:
    """One page of the queue, the count of all matching rows, and where to go on."""

    items: list[PendingApproval]
    total: int
    next_cursor: str | None


class PendingApprovals:
    """Reads the queue: filterable by graph, node, role, age and deadline; pageable."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def page(
        self,
        *,
        graph_id: str | None = None,
        node: str | None = None,
        role: str | None = None,
        min_age_seconds: float | None = None,
        overdue: bool = False,
        limit: int = 50,
        after: str | None = None,
        now: datetime | None = None,
    ) -> ApprovalsPage:
        now = now or datetime.now(UTC)
        where, params = [], []
        for column, value in (("graph_id", graph_id), ("node", node), ("required_role", role)):
            if value is not None:
                where.append(f"{column} = %s")
                params.append(value)
        if min_age_seconds is not None:
            where.append("raised_at <= %s")
            params.append(utc_text(datetime.fromtimestamp(now.timestamp() - min_age_seconds, UTC)))
        if overdue:
            where.append("due_by IS NOT NULL AND due_by < %s")
            params.append(utc_text(now))
        page = keyset_page(
            self.db,
            table=self.db.table(QUEUE),
            columns="raised_at, interrupt_id, thread_id, graph_id, node, payload, "
            "required_role, due_by, assigned_to",
            where=where,
            params=params,
            keys=("raised_at", "interrupt_id"),
            descending=False,
            limit=limit,
            after=after,
        )
        items = [_approval(row, now) for row in page.rows]
        return ApprovalsPage(items, page.total, page.next_cursor)


def _approval(row: Any, now: datetime) -> PendingApproval:
    raised_at, interrupt_id, thread_id, graph_id, node, payload, role, due_by, assigned = row
    raised = parse_utc_text(raised_at)
    return PendingApproval(
        interrupt_id=interrupt_id,
        thread_id=thread_id,
        graph_id=graph_id,
        node=node,
        payload=json.loads(payload),
        raised_at=raised_at,
        age_seconds=max((now - raised).total_seconds(), 0.0),
        required_role=role,
        due_by=due_by,
        assigned_to=assigned,
    )
