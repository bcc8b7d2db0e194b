"""The decision register: one row per decision on an interrupt, for auditors to take away
(`GET /reports/decisions`, CSV or JSON, for a period).

A decision is an answer (`InterruptResumed`: approve, reject, edit, respond, escalate),
one approval of several (`InterruptApproved`, four eyes), or a deadline's rule deciding
for nobody (`InterruptExpired` with a decision; an escalation decides nothing). Each row
has the thread, graph, interrupt and node, the digest of the question decided, who
decided and in which role, the decision, the reason, when the question was raised and
how long the decision took, the deadline that stood when it was made, and the version of
the oversight policy it was made under (`policy_version`, domain/oversight/policy_records.py;
empty for a deadline's rule, and for answers recorded before policies were).

The questions are kept beside (`holdpoint_register_questions`: when each was raised, its
digest and deadline, moved by escalations), so that a decision's row is made from its
own event and that one row.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import astuple, dataclass, fields
from typing import Any

from domain.oversight.hold_points import question_digest
from domain.record.thread import WorkflowThread
from projections.database import Cursor, Database
from projections.log_reader import Entry
from projections.projection import Projection
from projections.report_formats import cell
from projections.rows import ReaderIndex, Rows, TableShape
from projections.timestamps import parse_utc_text, utc_text_or_none

DECISIONS = "holdpoint_decision_register"
QUESTIONS = "holdpoint_register_questions"


@dataclass(frozen=True)
class Decision:
    """One row of the register."""

    position: int
    decided_at: str
    thread_id: str
    graph_id: str
    interrupt_id: str
    node: str
    question_digest: str | None
    decider_id: str | None  # None: the deadline's rule decided
    decider_role: str | None
    decision: str
    by: str  # "answer", "approval" (one of several) or "deadline"
    reason: str | None
    raised_at: str | None
    seconds_to_decide: float | None
    due_by: str | None
    policy_version: int | None


COLUMNS = tuple(field.name for field in fields(Decision))
QUESTION_SHAPE = TableShape(
    QUESTIONS, "interrupt_id", ("interrupt_id", "node", "raised_at", "digest", "due_by")
)
READER_INDEXES = (ReaderIndex(f"{DECISIONS}_at", DECISIONS, "(decided_at)"),)
EVENTS = (
    WorkflowThread.InterruptRaised,
    WorkflowThread.InterruptResumed,
    WorkflowThread.InterruptApproved,
    WorkflowThread.InterruptExpired,
)


class DecisionRegisterProjection(Projection):
    name = "decision_register"
    version = 2  # 2: policy_version
    tables = (DECISIONS, QUESTIONS)
    thread_rows = ((DECISIONS, "thread_id"),)
    event_classes = EVENTS

    def create_tables(self, cursor: Cursor, db: Database) -> None:
        cursor.execute(
            f"CREATE TABLE IF NOT EXISTS {db.table(DECISIONS)} ("
            "position BIGINT PRIMARY KEY, decided_at TEXT NOT NULL, thread_id TEXT NOT NULL, "
            "graph_id TEXT NOT NULL, interrupt_id TEXT NOT NULL, node TEXT NOT NULL, "
            "question_digest TEXT, decider_id TEXT, decider_role TEXT, decision TEXT NOT NULL, "
            "by TEXT NOT NULL, reason TEXT, raised_at TEXT, "
            "seconds_to_decide DOUBLE PRECISION, due_by TEXT, policy_version INTEGER)"
        )
        cursor.execute(
            f"CREATE TABLE IF NOT EXISTS {db.table(QUESTIONS)} ("
            "interrupt_id TEXT PRIMARY KEY, node TEXT NOT NULL, raised_at TEXT NOT NULL, "
            "digest TEXT, due_by TEXT)"
        )
        for index in READER_INDEXES:
            index.create(cursor, db)

    def clear(self, cursor: Cursor, db: Database) -> None:
        for index in READER_INDEXES:
            index.drop(cursor, db)
        for table in self.tables:
            db.clear_table(cursor, db.table(table))

    def apply_batch(self, entries: Sequence[Entry], cursor: Cursor, db: Database) -> None:
        questions = Rows(QUESTION_SHAPE)
        raised = {
            e.event.interrupt_id
            for e in entries
            if issubclass(e.cls, WorkflowThread.InterruptRaised)
        }
        named = {
            e.event.interrupt_id
            for e in entries
            if not issubclass(e.cls, WorkflowThread.InterruptRaised)
        }
        questions.load(cursor, db, "interrupt_id", named - raised)
        decisions = []
        for entry in entries:
            thread, event = entry.thread, entry.event
            if thread is None:
                continue
            if isinstance(event, WorkflowThread.InterruptRaised):
                questions.put(
                    {
                        "interrupt_id": event.interrupt_id,
                        "node": event.node,
                        "raised_at": entry.at,
                        "digest": event.digest or question_digest(event.value),
                        "due_by": utc_text_or_none(event.due_by),
                    }
                )
                continue
            question = questions.get(event.interrupt_id)
            if question is None:
                continue  # its raising could not be decoded (quarantined)
            if isinstance(event, WorkflowThread.InterruptExpired):
                if event.rule["action"] == "escalate":  # no decision: a new deadline
                    question["due_by"] = utc_text_or_none(event.new_due_by)
                    continue
                actor, decision, by, reason = {}, event.rule["decision"], "deadline", None
            elif isinstance(event, WorkflowThread.InterruptApproved):
                actor, decision, by, reason = event.actor, "approve", "approval", event.reason
            else:
                actor, decision, by, reason = event.actor, event.decision, "answer", event.reason
            policy_version = getattr(event, "policy_version", None)
            decisions.append(
                Decision(
                    position=entry.position,
                    decided_at=entry.at,
                    thread_id=thread.thread_id,
                    graph_id=thread.graph_id,
                    interrupt_id=event.interrupt_id,
                    node=question["node"],
                    question_digest=getattr(event, "digest", None) or question["digest"],
                    decider_id=actor.get("id"),
                    decider_role=actor.get("role"),
                    decision=decision,
                    by=by,
                    reason=reason,
                    raised_at=question["raised_at"],
                    seconds_to_decide=_seconds(question["raised_at"], entry.at),
                    due_by=question["due_by"],
                    policy_version=policy_version,
                )
            )
        questions.write(cursor, db)
        if decisions:
            rows = [tuple(getattr(d, column) for column in COLUMNS) for d in decisions]
            db.insert_many(cursor, db.table(DECISIONS), COLUMNS, rows)


def _seconds(raised_at: str, decided_at: str) -> float | None:
    if not raised_at or not decided_at:
        return None
    return (parse_utc_text(decided_at) - parse_utc_text(raised_at)).total_seconds()


class DecisionRegister:
    def __init__(self, db: Database) -> None:
        self.db = db

    def decisions(
        self, *, since: str | None = None, until: str | None = None, graph_id: str | None = None
    ) -> list[Decision]:
        """The decisions made in [since, until) (read-model time text), oldest first."""
        conditions: list[str] = []
        params: list[Any] = []
        for clause, value in (
            ("decided_at >= %s", since),
            ("decided_at < %s", until),
            ("graph_id = %s", graph_id),
        ):
            if value is not None:
                conditions.append(clause)
                params.append(value)
        where = f"WHERE {' AND '.join(conditions)}" if conditions else ""
        rows = self.db.statement(
            f"SELECT {', '.join(COLUMNS)} FROM {self.db.table(DECISIONS)} {where} "
            "ORDER BY position",
            params,
            write=False,
        )
        return [Decision(*row) for row in rows]


def register_csv(decisions: Sequence[Decision]) -> str:
    """The register as CSV: a header of the columns, then a row per decision, each cell
    as the report's (text that a spreadsheet would run as a formula is guarded)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for decision in decisions:
        writer.writerow([cell(value) for value in astuple(decision)])
    return out.getvalue()
