"""The oversight log: every interrupt and what became of it, for Article 14 reports.

One row per interrupt: raised (graph, node, thread, required role), then
decided (decision, reviewer, reason, seconds to decide), cancelled with its
thread, or superseded when its node asked anew. Cancellations are kept with
their reasons (the Art. 14(4)(e) stop). Reports read these rows; they never
replay events.
"""

from __future__ import annotations

from typing import Any

from domain.thread import WorkflowThread
from projections.database import Cursor, Database
from projections.runner import Projection
from projections.timestamps import parse_utc_text, utc_text, utc_text_or_none

INTERRUPTS = "holdpoint_interrupt_log"
CANCELLATIONS = "holdpoint_cancellations"
THREADS = "holdpoint_oversight_threads"


class OversightProjection(Projection):
    name = "oversight"
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
            f"CREATE TABLE IF NOT EXISTS {db.table(THREADS)} "
            "(originator_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL, graph_id TEXT NOT NULL)"
        )
        cursor.execute(
            f"CREATE TABLE IF NOT EXISTS {db.table(INTERRUPTS)} ("
            "interrupt_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL, graph_id TEXT NOT NULL, "
            "node TEXT NOT NULL, idx INTEGER NOT NULL, raised_at TEXT NOT NULL, "
            "required_role TEXT, due_by TEXT, escalations INTEGER NOT NULL DEFAULT 0, "
            "outcome TEXT NOT NULL, closed_at TEXT, decision TEXT, "
            "reviewer_id TEXT, reviewer_role TEXT, reason TEXT, "
            "seconds_to_decision DOUBLE PRECISION)"
        )
        cursor.execute(
            f"CREATE INDEX IF NOT EXISTS {INTERRUPTS}_raised "
            f"ON {db.table(INTERRUPTS)} (raised_at, graph_id)"
        )
        cursor.execute(  # superseding and cancelling find a thread's open interrupts
            f"CREATE INDEX IF NOT EXISTS {INTERRUPTS}_thread "
            f"ON {db.table(INTERRUPTS)} (thread_id, outcome)"
        )
        cursor.execute(  # decisions and breaches in a period
            f"CREATE INDEX IF NOT EXISTS {INTERRUPTS}_closed ON {db.table(INTERRUPTS)} (closed_at)"
        )
        cursor.execute(
            f"CREATE TABLE IF NOT EXISTS {db.table(CANCELLATIONS)} ("
            "thread_id TEXT PRIMARY KEY, graph_id TEXT NOT NULL, cancelled_at TEXT NOT NULL, "
            "actor_id TEXT, actor_role TEXT, reason TEXT)"
        )

    def clear(self, cursor: Cursor, db: Database) -> None:
        for table in (THREADS, INTERRUPTS, CANCELLATIONS):
            cursor.execute(f"DELETE FROM {db.table(table)}")

    def apply(self, event: Any, _position: int, cursor: Cursor, db: Database) -> None:
        key, at = event.originator_id.hex, utc_text(event.timestamp)
        log = db.table(INTERRUPTS)
        if isinstance(event, WorkflowThread.ThreadStarted | WorkflowThread.ThreadForked):
            cursor.execute(
                f"INSERT INTO {db.table(THREADS)} (originator_id, thread_id, graph_id) "
                "VALUES (%s, %s, %s)",
                (key, event.thread_id, event.graph_id),
            )
        elif isinstance(event, WorkflowThread.InterruptRaised):
            cursor.execute(
                f"UPDATE {log} SET outcome = 'superseded', closed_at = %s WHERE outcome = 'open' "
                f"AND node = %s AND idx = %s AND thread_id = "
                f"(SELECT thread_id FROM {db.table(THREADS)} WHERE originator_id = %s)",
                (at, event.node, event.index, key),
            )
            cursor.execute(
                f"INSERT INTO {log} (interrupt_id, thread_id, graph_id, node, idx, raised_at, "
                "required_role, due_by, outcome) "
                f"SELECT %s, thread_id, graph_id, %s, %s, %s, %s, %s, 'open' "
                f"FROM {db.table(THREADS)} WHERE originator_id = %s",
                (
                    event.interrupt_id,
                    event.node,
                    event.index,
                    at,
                    event.required_role,
                    utc_text_or_none(event.due_by),
                    key,
                ),
            )
        elif isinstance(event, WorkflowThread.InterruptExpired):
            if event.rule["action"] == "escalate":
                cursor.execute(
                    f"UPDATE {log} SET escalations = escalations + 1, required_role = %s, "
                    "due_by = %s WHERE interrupt_id = %s",
                    (event.rule["role"], utc_text_or_none(event.new_due_by), event.interrupt_id),
                )
            else:
                self._close_as_decided(cursor, db, event, at, "expired", {}, None)
        elif isinstance(event, WorkflowThread.InterruptResumed):
            self._close_as_decided(cursor, db, event, at, event.decision, event.actor, event.reason)
        elif isinstance(event, WorkflowThread.ThreadCancelled):
            cursor.execute(
                f"UPDATE {log} SET outcome = 'cancelled', closed_at = %s WHERE outcome = 'open' "
                f"AND thread_id = "
                f"(SELECT thread_id FROM {db.table(THREADS)} WHERE originator_id = %s)",
                (at, key),
            )
            cursor.execute(
                f"INSERT INTO {db.table(CANCELLATIONS)} (thread_id, graph_id, cancelled_at, "
                "actor_id, actor_role, reason) "
                f"SELECT thread_id, graph_id, %s, %s, %s, %s FROM {db.table(THREADS)} "
                "WHERE originator_id = %s",
                (at, event.actor.get("id"), event.actor.get("role"), event.reason, key),
            )

    @staticmethod
    def _close_as_decided(
        cursor: Cursor,
        db: Database,
        event: Any,
        at: str,
        decision: str,
        actor: dict[str, Any],
        reason: str | None,
    ) -> None:
        log = db.table(INTERRUPTS)
        cursor.execute(
            f"SELECT raised_at FROM {log} WHERE interrupt_id = %s", (event.interrupt_id,)
        )
        raised = parse_utc_text(cursor.fetchone()[0])
        seconds = (event.timestamp - raised).total_seconds()
        outcome = "expired" if decision == "expired" else "decided"
        cursor.execute(
            f"UPDATE {log} SET outcome = %s, closed_at = %s, decision = %s, reviewer_id = %s, "
            "reviewer_role = %s, reason = %s, seconds_to_decision = %s WHERE interrupt_id = %s",
            (
                outcome,
                at,
                decision,
                actor.get("id"),
                actor.get("role"),
                reason,
                seconds,
                event.interrupt_id,
            ),
        )
