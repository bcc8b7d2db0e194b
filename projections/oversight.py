"""The oversight log: every interrupt and what became of it, for Article 14 reports.

One row per interrupt: raised (graph, node, thread, required role, the digest
of its payload, the approvals it needs), then decided (decision, reviewer,
reason, seconds to decide, the approvals given), cancelled with its thread,
or superseded when its node asked anew (or, for a real LangGraph graph, when its thread
moved on without an answer: InterruptSuperseded). Cancellations are kept with their
reasons (the Art. 14(4)(e) stop). Reports read these rows; they never replay
events.

An answer binds to the question it answered (`domain/oversight/hold_points.py`), so each
row also says what became of its answer once its node ran past it, in
`applied`: 'applied' when the node's NodeCompleted lists the interrupt with
the digest of the question asked (an answer recorded before digests were
lists none: it applied by position); 'reasked' when the node asked another
question in its place (the new interrupt's row names this one in `reasked`);
'unapplied' when the node completed while the interrupt was open or decided
without applying its answer, which the domain never records: the check exists
to catch a regression that would. NULL until then.

The hold points' other records are kept beside: the edits `as_node` (each a
decision about the flow) and the attempts their rules refused, which are
events of no thread (`RefusedAttempt`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from typing import Any

from domain.access.identity import RefusedAttempt
from domain.oversight.hold_points import question_digest
from domain.oversight.reviews import review_of, review_outcome
from domain.record.thread import WorkflowThread
from projections.database import Cursor, Database
from projections.log_reader import Entry
from projections.oversight_tables import (
    APPLIED,
    CANCELLATION_SHAPE,
    CANCELLATIONS,
    FLOW_EDIT_SHAPE,
    FLOW_EDITS,
    INTERRUPTS,
    LOG_SHAPE,
    READER_INDEXES,
    REASKED,
    REFUSAL_SHAPE,
    TABLES,
    UNAPPLIED,
    UNSETTLED,
    create_tables,
)
from projections.projection import Projection
from projections.rows import INTERRUPT_EVENTS, Row, Rows, continued_threads, json_text
from projections.threads import Thread
from projections.timestamps import parse_utc_text, utc_text_or_none

__all__ = ["CANCELLATIONS", "INTERRUPTS", "READER_INDEXES", "OversightProjection"]

# The refusals the oversight log keeps: those of the hold points' own rules.
HOLD_POINT_REFUSALS = frozenset({"hold_point", "four_eyes", "question_changed"})
# Read whole, and rare.
RARE_EVENTS = (WorkflowThread.StateEdited, RefusedAttempt.AccessRefused)
SETTLING = ("open", "decided", "expired")  # the outcomes of UNSETTLED
# What an event is to the model, by class: found once per class, as a batch asks it of
# every entry (a chain of issubclass calls per entry is a rebuild's cost).
REFUSED, COMPLETED, EDITED, CANCELLED = "refused", "completed", "edited", "cancelled"
RAISED, EXPIRED, APPROVED, RESUMED = "raised", "expired", "approved", "resumed"
SUPERSEDED = "superseded"
KINDS: tuple[tuple[type, str], ...] = (
    (WorkflowThread.InterruptRaised, RAISED),
    (WorkflowThread.InterruptResumed, RESUMED),
    (WorkflowThread.NodeCompleted, COMPLETED),
    (WorkflowThread.InterruptExpired, EXPIRED),
    (WorkflowThread.InterruptApproved, APPROVED),
    (WorkflowThread.StateEdited, EDITED),
    (WorkflowThread.ThreadCancelled, CANCELLED),
    (WorkflowThread.InterruptSuperseded, SUPERSEDED),
    (RefusedAttempt.AccessRefused, REFUSED),
)
INTERRUPT_KINDS = frozenset({RAISED, EXPIRED, APPROVED, RESUMED, SUPERSEDED})
NAMING = frozenset(
    {RESUMED, EXPIRED, APPROVED, SUPERSEDED}
)  # the kinds naming an interrupt raised before


@cache
def kind_of(cls: type) -> str:
    """What an event of class `cls` is to the oversight log: a kind of KINDS, or "other"
    (a thread's start: its thread is all the model needs of it)."""
    return next((kind for kinds, kind in KINDS if issubclass(cls, kinds)), "other")


class OversightProjection(Projection):
    name = "oversight"
    # 2: the digest, approvals, re-asks and applied answers; flow edits and refusals.
    # 3: each reviewed action's decision (`actions`).
    version = 3
    tables = TABLES
    thread_rows = (
        (INTERRUPTS, "thread_id"),
        (CANCELLATIONS, "thread_id"),
        (FLOW_EDITS, "thread_id"),
    )
    event_classes = (*INTERRUPT_EVENTS, WorkflowThread.NodeCompleted, *RARE_EVENTS)

    def create_tables(self, cursor: Cursor, db: Database) -> None:
        create_tables(cursor, db)

    def clear(self, cursor: Cursor, db: Database) -> None:
        for index in READER_INDEXES:
            index.drop(cursor, db)
        for table in TABLES:
            db.clear_table(cursor, db.table(table))

    def apply_batch(self, entries: Sequence[Entry], cursor: Cursor, db: Database) -> None:
        log = Rows(LOG_SHAPE, group_by="thread_id")
        cancellations, edits, refusals = (
            Rows(CANCELLATION_SHAPE),
            Rows(FLOW_EDIT_SHAPE),
            Rows(REFUSAL_SHAPE),
        )
        log.load(cursor, db, "thread_id", continued_threads(entries), UNSETTLED)
        log.load(cursor, db, "interrupt_id", _named(entries))
        for entry in entries:
            thread, kind = entry.thread, kind_of(entry.cls)
            if thread is None:
                if kind == REFUSED:
                    _refused(refusals, entry)
            elif kind == COMPLETED:
                waiting = _unsettled(log, thread.thread_id)
                if waiting:  # only now is the event decoded
                    _node_completed(waiting, entry.event)
            elif kind in INTERRUPT_KINDS:
                _interrupt_changed(log, entry, kind, thread)
            elif kind == EDITED:
                if entry.event.decision == "edit":
                    _flow_edit(edits, entry, thread)
            elif kind == CANCELLED:
                _cancelled(log, cancellations, entry, thread)
        for rows in (log, cancellations, edits, refusals):
            rows.write(cursor, db)


def _interrupt_changed(log: Rows, entry: Entry, kind: str, thread: Thread) -> None:
    """An interrupt raised, expired, approved once (of several) or answered."""
    event, at = entry.event, entry.at
    if kind == RAISED:
        for earlier in _open(log, thread.thread_id) if event.task is None else ():
            if earlier["node"] == event.node and earlier["idx"] == event.index:
                earlier["outcome"], earlier["closed_at"] = "superseded", at
        reasked = log.get(event.reasked) if event.reasked else None
        if reasked is not None and reasked["applied"] is None:
            reasked["applied"] = REASKED
        log.put(_raised(event, thread, at))
        return
    row = log.get(event.interrupt_id)
    if row is None:
        return
    if kind == SUPERSEDED:
        if row["outcome"] == "open":
            row["outcome"], row["closed_at"] = "superseded", at
    elif kind == EXPIRED:
        if event.rule["action"] == "escalate":
            row["escalations"] += 1
            row["required_role"] = event.rule["role"]
            row["due_by"] = utc_text_or_none(event.new_due_by)
        else:
            _close_as_decided(row, event, at, "expired", {}, None)
    elif kind == APPROVED:
        row["approvals_given"] = event.approvals  # so far, this one included
    else:  # RESUMED
        _close_as_decided(row, event, at, event.decision, event.actor, event.reason)
        if event.decision == "approve":  # the last (or only) approval
            row["approvals_given"] += 1
        if row.get("actions"):
            row["actions"] = _decided_actions(row["actions"], event.resume)


def _cancelled(log: Rows, cancellations: Rows, entry: Entry, thread: Thread) -> None:
    """A stopped thread: its open interrupts withdrawn, the stop kept with its reason."""
    event, at = entry.event, entry.at
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


def _named(entries: Sequence[Entry]) -> set[str]:
    """The interrupts a batch answers, approves, expires or re-asks, whose rows must be
    loaded (a thread's unsettled rows are loaded anyway; these may be settled)."""
    named = set()
    for entry in entries:
        kind = kind_of(entry.cls)
        if kind in NAMING:
            named.add(entry.event.interrupt_id)
        elif kind == RAISED and entry.event.reasked:
            named.add(entry.event.reasked)
    return named


def _open(log: Rows, thread_id: str) -> list[Row]:
    return [row for row in log.in_group(thread_id) if row["outcome"] == "open"]


def _unsettled(log: Rows, thread_id: str) -> list[Row]:
    """The thread's rows whose answer a node's completion may still settle."""
    return [
        row
        for row in log.in_group(thread_id)
        if row["applied"] is None and row["outcome"] in SETTLING
    ]


def _node_completed(waiting: list[Row], event: Any) -> None:
    """Settle the rows of the node that completed: was each one's answer applied, to the
    question it answered?

    A NodeCompleted recorded before answers were bound has no `applied` at all (not
    even None): its answers applied by position, so its decided rows count as applied.
    """
    mine = [row for row in waiting if row["node"] == event.node]
    if not mine:
        return
    if "applied" not in vars(event):
        for row in mine:
            if row["outcome"] != "open":
                row["applied"] = APPLIED
        return
    received = {answer["interrupt_id"]: answer.get("digest") for answer in event.applied or ()}
    for row in mine:  # a digest None: an answer recorded before answers were bound
        interrupt_id = row["interrupt_id"]
        matched = interrupt_id in received and received[interrupt_id] in (None, row["digest"])
        row["applied"] = APPLIED if matched else UNAPPLIED


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
        # Recorded since hold points; computed from the payload for older events.
        "digest": event.digest or question_digest(event.value),
        "approvals_needed": event.approvals,
        "approvals_given": 0,
        "reasked": event.reasked,
        "applied": None,
        "actions": _reviewed_actions(event),
    }


def _reviewed_actions(event: Any) -> str | None:
    """A review of an agent's tool calls: its shape and actions, undecided (JSON)."""
    schema = (event.task or {}).get("response_schema")
    review = review_of(event.value, schema)
    if review is None:
        return None
    actions = [{"name": a["name"], "allowed": a["allowed"]} for a in review["actions"]]
    return json_text({"shape": review["shape"], "actions": actions})


def _decided_actions(recorded: str, resume: Any) -> str:
    """The review's actions with what the answer decided of each (JSON)."""
    review = json.loads(recorded)
    actions = [{**a, "args": None, "description": None} for a in review["actions"]]
    outcome = review_outcome({"shape": review["shape"], "actions": actions}, resume)
    decided = [
        {"name": o["name"], "decision": o["decision"], "edited": o["edited_args"] is not None}
        for o in outcome
    ]
    return json_text({"shape": review["shape"], "actions": decided or review["actions"]})


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


def _flow_edit(edits: Rows, entry: Entry, thread: Thread) -> None:
    event = entry.event
    edits.put(
        {
            "position": entry.position,
            "thread_id": thread.thread_id,
            "graph_id": thread.graph_id,
            "at": entry.at,
            "actor_id": event.actor.get("id"),
            "actor_role": event.actor.get("role"),
            "as_node": event.as_node,
            "reason": event.reason,
        }
    )


def _refused(refusals: Rows, entry: Entry) -> None:
    event = entry.event
    if event.reason in HOLD_POINT_REFUSALS:
        refusals.put(
            {
                "position": entry.position,
                "at": entry.at,
                "principal_id": event.principal_id,
                "role": event.role,
                "reason": event.reason,
                "action": event.action,
                "target": event.target,
            }
        )
