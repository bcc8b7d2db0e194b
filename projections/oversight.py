"""The oversight log: every interrupt and what became of it, for Article 14 reports.

One row per interrupt: raised (graph, node, thread, required role), then
decided (decision, reviewer, reason, seconds to decide), cancelled with its
thread, or superseded when its node asked anew. Cancellations are kept with
their reasons (the Art. 14(4)(e) stop). Reports read these rows; they never
replay events.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from domain.thread import WorkflowThread
from projections.database import Cursor, Database
from projections.log_reader import Entry
from projections.rows import (
    INTERRUPT_CHANGES,
    INTERRUPT_EVENTS,
    ReaderIndex,
    Row,
    Rows,
    TableShape,
    continued_threads,
)
from projections.runner import Projection
from projections.threads import STARTS, Thread
from projections.timestamps import parse_utc_text, utc_text_or_none

INTERRUPTS = "holdpoint_interrupt_log"
CANCELLATIONS = "holdpoint_cancellations"


class OversightProjection(Projection):
    name = "oversight"
    event_classes = INTERRUPT_EVENTS
    decoded_classes = INTERRUPT_CHANGES

    def create_tables(self, cursor: Cursor, db: Database) -> None:
        cursor.execute(
            f"CREATE TABLE IF NOT EXISTS {db.table(INTERRUPTS)} ("
            "interrupt_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL, graph_id TEXT NOT NULL, "
            "node TEXT NOT NULL, idx INTEGER NOT NULL, raised_at TEXT NOT NULL, "
            "required_role TEXT, due_by TEXT, escalations INTEGER NOT NULL DEFAULT 0, "
            "outcome TEXT NOT NULL, closed_at TEXT, decision TEXT, "
            "reviewer_id TEXT, reviewer_role TEXT, reason TEXT, "
            "seconds_to_decision DOUBLE PRECISION)"
        )
        cursor.execute(  # the batch's loads find a thread's open interrupts by it
            f"CREATE INDEX IF NOT EXISTS {INTERRUPTS}_thread "
            f"ON {db.table(INTERRUPTS)} (thread_id, outcome)"
        )
        for index in READER_INDEXES:
            index.create(cursor, db)
        if db.dialect == "postgres":  # true group counts, so the report's grouping is hashed
            cursor.execute(
                f"CREATE STATISTICS IF NOT EXISTS {db.table(INTERRUPTS + '_decided_groups')} "
                f"(ndistinct) ON (substr(closed_at, 1, 10)), decision, reviewer_id, graph_id "
                f"FROM {db.table(INTERRUPTS)}"
            )
        cursor.execute(
            f"CREATE TABLE IF NOT EXISTS {db.table(CANCELLATIONS)} ("
            "thread_id TEXT PRIMARY KEY, graph_id TEXT NOT NULL, cancelled_at TEXT NOT NULL, "
            "actor_id TEXT, actor_role TEXT, reason TEXT)"
        )

    def clear(self, cursor: Cursor, db: Database) -> None:
        for index in READER_INDEXES:
            index.drop(cursor, db)
        for table in (INTERRUPTS, CANCELLATIONS):
            db.clear_table(cursor, db.table(table))

    def apply_batch(self, entries: Sequence[Entry], cursor: Cursor, db: Database) -> None:
        log, cancellations = Rows(LOG_SHAPE, group_by="thread_id"), Rows(CANCELLATION_SHAPE)
        log.load(cursor, db, "thread_id", continued_threads(entries), "outcome = 'open'")
        log.load(cursor, db, "interrupt_id", _answered(entries))
        for entry in entries:
            thread, cls, at = entry.thread, entry.cls, entry.at
            if thread is None or issubclass(cls, STARTS):
                continue
            event = entry.event
            if issubclass(cls, WorkflowThread.InterruptRaised):
                for earlier in _open(log, thread.thread_id):
                    if earlier["node"] == event.node and earlier["idx"] == event.index:
                        earlier["outcome"], earlier["closed_at"] = "superseded", at
                log.put(_raised(event, thread, at))
            elif issubclass(cls, WorkflowThread.InterruptExpired):
                row = log.get(event.interrupt_id)
                if row is None:
                    continue
                if event.rule["action"] == "escalate":
                    row["escalations"] += 1
                    row["required_role"] = event.rule["role"]
                    row["due_by"] = utc_text_or_none(event.new_due_by)
                else:
                    _close_as_decided(row, event, at, "expired", {}, None)
            elif issubclass(cls, WorkflowThread.InterruptResumed):
                row = log.get(event.interrupt_id)
                if row is not None:
                    _close_as_decided(row, event, at, event.decision, event.actor, event.reason)
            elif issubclass(cls, WorkflowThread.ThreadCancelled):
                for waiting in _open(log, thread.thread_id):
                    waiting["outcome"], waiting["closed_at"] = "cancelled", at
                cancellations.put(
                    {
                        "thread_id": thread.thread_id,
                        "graph_id": thread.graph_id,
                        "cancelled_at": at,
                        "actor_id": event.actor.get("id"),
                        "actor_role": event.actor.get("role"),
                        "reason": event.reason,
                    }
                )
        for rows in (log, cancellations):
            rows.write(cursor, db)


READER_INDEXES = (  # the report's
    ReaderIndex(f"{INTERRUPTS}_raised", INTERRUPTS, "(raised_at, graph_id)"),
    ReaderIndex(f"{INTERRUPTS}_closed", INTERRUPTS, "(closed_at)"),  # decisions, breaches
    ReaderIndex(  # decisions, grouped by day (read in index order)
        f"{INTERRUPTS}_decided_day",
        INTERRUPTS,
        "(substr(closed_at, 1, 10), decision, reviewer_id, graph_id, outcome, closed_at, "
        "seconds_to_decision)",
    ),
    ReaderIndex(  # the open backlog (partial: other outcomes must not use it)
        f"{INTERRUPTS}_open", INTERRUPTS, "(graph_id, raised_at) WHERE outcome = 'open'"
    ),
)
LOG_SHAPE = TableShape(
    INTERRUPTS,
    "interrupt_id",
    (
        "interrupt_id",
        "thread_id",
        "graph_id",
        "node",
        "idx",
        "raised_at",
        "required_role",
        "due_by",
        "escalations",
        "outcome",
        "closed_at",
        "decision",
        "reviewer_id",
        "reviewer_role",
        "reason",
        "seconds_to_decision",
    ),
)
CANCELLATION_SHAPE = TableShape(
    CANCELLATIONS,
    "thread_id",
    ("thread_id", "graph_id", "cancelled_at", "actor_id", "actor_role", "reason"),
)


def _answered(entries: Sequence[Entry]) -> set[str]:
    """The interrupts a batch answers or expires, whose rows must be loaded."""
    answers = (WorkflowThread.InterruptResumed, WorkflowThread.InterruptExpired)
    return {e.event.interrupt_id for e in entries if issubclass(e.cls, answers)}


def _open(log: Rows, thread_id: str) -> list[Row]:
    return [row for row in log.in_group(thread_id) if row["outcome"] == "open"]


def _raised(event: Any, thread: Thread, at: str) -> Row:
    return {
        "interrupt_id": event.interrupt_id,
        "thread_id": thread.thread_id,
        "graph_id": thread.graph_id,
        "node": event.node,
        "idx": event.index,
        "raised_at": at,
        "required_role": event.required_role,
        "due_by": utc_text_or_none(event.due_by),
        "escalations": 0,
        "outcome": "open",
        "closed_at": None,
        "decision": None,
        "reviewer_id": None,
        "reviewer_role": None,
        "reason": None,
        "seconds_to_decision": None,
    }


def _close_as_decided(
    row: Row, event: Any, at: str, decision: str, actor: dict[str, Any], reason: str | None
) -> None:
    row.update(
        outcome="expired" if decision == "expired" else "decided",
        closed_at=at,
        decision=decision,
        reviewer_id=actor.get("id"),
        reviewer_role=actor.get("role"),
        reason=reason,
        seconds_to_decision=(event.timestamp - parse_utc_text(row["raised_at"])).total_seconds(),
    )
