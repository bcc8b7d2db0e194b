"""The pending-approval queue: one row per open interrupt.

A row appears when an interrupt is raised and goes when it is answered,
superseded (the node asked anew; for a real LangGraph graph, an InterruptSuperseded says
so, and says it too when the thread moved on without an answer) or its thread is
cancelled. It carries the
digest of the payload (what a decision binds to: the reviewer sends it back
with the answer) and, for an interrupt that needs several approvals (four
eyes), how many it needs and how many it has (InterruptApproved). The count of
open rows per (graph, node, required role) is kept beside them, so that a
page's total is a sum over a few rows, not a count over the whole queue. The queue is
read in a stable order, oldest first (raised_at, then interrupt id), with a
keyset cursor, so pages neither skip nor repeat rows while the queue moves. Each row
keeps the title its `interrupt()` declared (projections/item_titles.py) and whether the
inbox may decide it in bulk; its words, and its thread's, are kept for the inbox's text
search (projections/pending_search.py).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from domain.oversight.hold_points import question_digest
from domain.record.thread import WorkflowThread
from projections.database import Cursor, Database
from projections.item_titles import render_title
from projections.log_reader import Entry
from projections.oversight_tables import INTERRUPTS
from projections.paging import keyset_page
from projections.pending_search import (
    TERMS,
    THREAD_WIDE,
    add_new_terms,
    add_terms,
    create_terms_table,
    drop_terms,
    item_terms,
    matching,
    terms,
)
from projections.projection import Projection
from projections.rows import (
    INTERRUPT_EVENTS,
    ReaderIndex,
    Rows,
    TableShape,
    continued_threads,
    json_text,
)
from projections.threads import STARTS
from projections.timestamps import parse_utc_text, utc_text, utc_text_or_none

QUEUE = "holdpoint_pending_approvals"
COUNTS = "holdpoint_pending_counts"
NO_ROLE = ""  # the counts' key for "any role may decide" (a key column cannot be NULL)


class PendingApprovalsProjection(Projection):
    name = "pending_approvals"
    # 2: payload_digest, approvals_needed, approvals_given; 3: namespace; 4: title, bulk
    # and the search's words
    version = 4
    tables = (QUEUE, COUNTS, TERMS)
    thread_rows = ((TERMS, "thread_id"),)
    event_classes = (*INTERRUPT_EVENTS, WorkflowThread.MetadataUpdated)

    def create_tables(self, cursor: Cursor, db: Database) -> None:
        cursor.execute(
            f"CREATE TABLE IF NOT EXISTS {db.table(QUEUE)} ("
            "interrupt_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL, graph_id TEXT NOT NULL, "
            "node TEXT NOT NULL, idx INTEGER NOT NULL, payload TEXT NOT NULL, "
            "raised_at TEXT NOT NULL, required_role TEXT, due_by TEXT, assigned_to TEXT, "
            "position BIGINT NOT NULL, payload_digest TEXT, "
            "approvals_needed INTEGER NOT NULL DEFAULT 1, "
            "approvals_given INTEGER NOT NULL DEFAULT 0, namespace TEXT NOT NULL DEFAULT '', "
            "title TEXT, bulk INTEGER NOT NULL DEFAULT 0)"
        )
        cursor.execute(  # the batch's loads find a thread's rows by it
            f"CREATE INDEX IF NOT EXISTS {QUEUE}_thread ON {db.table(QUEUE)} (thread_id)"
        )
        for index in READER_INDEXES:
            index.create(cursor, db)
        cursor.execute(
            f"CREATE TABLE IF NOT EXISTS {db.table(COUNTS)} (graph_id TEXT NOT NULL, "
            "node TEXT NOT NULL, required_role TEXT NOT NULL, open_count BIGINT NOT NULL, "
            "PRIMARY KEY (graph_id, node, required_role))"
        )
        create_terms_table(cursor, db)

    def clear(self, cursor: Cursor, db: Database) -> None:
        for index in READER_INDEXES:
            index.drop(cursor, db)
        for table in (QUEUE, COUNTS, TERMS):
            db.clear_table(cursor, db.table(table))

    def apply_batch(self, entries: Sequence[Entry], cursor: Cursor, db: Database) -> None:
        queue = Rows(QUEUE_SHAPE, group_by="thread_id")
        queue.load(cursor, db, "thread_id", continued_threads(entries))
        thread_words: dict[str, set[str]] = {}  # each thread's words, this batch's
        begun: set[str] = set()  # the threads begun in it: they have no words before
        for entry in entries:
            thread, cls = entry.thread, entry.cls
            if issubclass(cls, STARTS):
                event = entry.event
                found = terms(event.thread_id, event.metadata)
                thread_words.setdefault(event.thread_id, set()).update(found)
                begun.add(event.thread_id)
                continue
            if thread is None:
                continue
            event = entry.event
            if issubclass(cls, WorkflowThread.MetadataUpdated):
                found = terms(event.metadata)
                thread_words.setdefault(thread.thread_id, set()).update(found)
                continue
            if issubclass(cls, WorkflowThread.InterruptRaised):
                for earlier in queue.in_group(thread.thread_id) if event.task is None else ():
                    if earlier["node"] == event.node and earlier["idx"] == event.index:
                        queue.delete(earlier["interrupt_id"])  # superseded: its node asked anew
                queue.put(
                    {
                        "interrupt_id": event.interrupt_id,
                        "thread_id": thread.thread_id,
                        "graph_id": thread.graph_id,
                        "node": event.node,
                        "idx": event.index,
                        "payload": json_text(event.value),
                        "raised_at": entry.at,
                        "required_role": event.required_role,
                        "due_by": utc_text_or_none(event.due_by),
                        "assigned_to": None,
                        "position": entry.position,
                        # Recorded since hold points; computed from the payload before.
                        "payload_digest": event.digest or question_digest(event.value),
                        "approvals_needed": event.approvals,
                        "approvals_given": 0,
                        # a real LangGraph graph's subgraph it was raised in ("": the root)
                        "namespace": (event.task or {}).get("namespace", ""),
                        "title": render_title(event.title, event.value),
                        "bulk": int(event.bulk),
                    }
                )
            elif issubclass(cls, WorkflowThread.InterruptApproved):
                row = queue.get(event.interrupt_id)
                if row is not None:  # the event counts the approvals so far, its own included
                    row["approvals_given"] = event.approvals
            elif issubclass(cls, WorkflowThread.InterruptExpired):
                row = queue.get(event.interrupt_id)
                if event.rule["action"] != "escalate":
                    queue.delete(event.interrupt_id)
                elif row is not None:
                    row["required_role"] = event.rule["role"]
                    row["due_by"] = utc_text_or_none(event.new_due_by)
            elif issubclass(
                cls, WorkflowThread.InterruptResumed | WorkflowThread.InterruptSuperseded
            ):
                queue.delete(event.interrupt_id)
            elif issubclass(cls, WorkflowThread.InterruptAssigned):
                row = queue.get(event.interrupt_id)
                if row is not None:
                    row["assigned_to"] = event.reviewer_id
            elif issubclass(cls, WorkflowThread.ThreadCancelled):
                for waiting in queue.in_group(thread.thread_id):
                    queue.delete(waiting["interrupt_id"])
        _count(queue, cursor, db)
        _index_words(queue, thread_words, begun, cursor, db)
        queue.write(cursor, db)


def _index_words(
    queue: Rows,
    thread_words: dict[str, set[str]],
    begun: set[str],
    cursor: Cursor,
    db: Database,
) -> None:
    """Keep the search's words: the batch's threads' and new interrupts', less its closed
    ones'. A thread begun or an interrupt raised in the batch has no words yet (a closed
    interrupt's, a purged thread's go with it): theirs are added in bulk."""
    closed, opened = [], []
    for before, after in queue.changes():
        if after is None and before is not None:
            closed.append((before["thread_id"], before["interrupt_id"]))
        elif before is None and after is not None:
            found = item_terms(after, json.loads(after["payload"]))
            opened.append((after["thread_id"], after["interrupt_id"], found))
    drop_terms(cursor, db, closed)
    threads = [(thread, THREAD_WIDE, found) for thread, found in thread_words.items()]
    add_new_terms(cursor, db, [*(t for t in threads if t[0] in begun), *opened])
    add_terms(cursor, db, [t for t in threads if t[0] not in begun])


def _count(queue: Rows, cursor: Cursor, db: Database) -> None:
    """Add the batch's openings and closings to the counts per (graph, node, role)."""
    delta: Counter[tuple[str, str, str]] = Counter()
    for before, after in queue.changes():
        for row, sign in ((before, -1), (after, 1)):
            if row is not None:
                delta[row["graph_id"], row["node"], row["required_role"] or NO_ROLE] += sign
    changed = [(*group, change) for group, change in delta.items() if change]
    if changed:
        cursor.executemany(
            f"INSERT INTO {db.table(COUNTS)} AS c (graph_id, node, required_role, open_count) "
            "VALUES (%s, %s, %s, %s) ON CONFLICT (graph_id, node, required_role) "
            "DO UPDATE SET open_count = c.open_count + excluded.open_count",
            changed,
        )
        # A group with nothing open has no row, as after a rebuild from zero.
        cursor.execute(f"DELETE FROM {db.table(COUNTS)} WHERE open_count = 0")


READER_INDEXES = (
    ReaderIndex(f"{QUEUE}_order", QUEUE, "(raised_at, interrupt_id)"),  # the queue, in order
    ReaderIndex(f"{QUEUE}_graph", QUEUE, "(graph_id, raised_at, interrupt_id)"),  # one graph's
    ReaderIndex(f"{QUEUE}_due", QUEUE, "(due_by) WHERE due_by IS NOT NULL"),  # overdue items
)
QUEUE_SHAPE = TableShape(
    QUEUE,
    "interrupt_id",
    (
        "interrupt_id",
        "thread_id",
        "graph_id",
        "node",
        "idx",
        "payload",
        "raised_at",
        "required_role",
        "due_by",
        "assigned_to",
        "position",
        "payload_digest",
        "approvals_needed",
        "approvals_given",
        "namespace",
        "title",
        "bulk",
    ),
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
    # What a decision binds to (sent back with it), and four eyes' count of approvals.
    payload_digest: str | None = None
    approvals_needed: int = 1
    approvals_given: int = 0
    namespace: str = ""  # a real LangGraph graph's subgraph ("": the graph itself)
    title: str | None = None  # as its `interrupt(..., title=...)` declared it
    bulk: bool = False  # whether the inbox may decide it with others in one action


@dataclass(frozen=True)
class ApprovalsPage:
    """One page of the queue, the count of all matching rows, and where to go on."""

    items: list[PendingApproval]
    total: int
    next_cursor: str | None


class PendingApprovals:
    """Reads the queue: filterable by graph, node, role, assigned reviewer, age and
    deadline; pageable."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def thread_of(self, interrupt_id: str) -> str | None:
        """The thread an interrupt was raised on, or None if no interrupt of that id is known
        (yet: the read models may not have applied it). An interrupt id names no thread,
        so a decision by id looks it up here: in the queue (the open ones), then in the
        oversight log (every interrupt ever raised, whatever became of it)."""
        with self.db.transaction(write=False) as cursor:
            for table in (QUEUE, INTERRUPTS):
                cursor.execute(
                    f"SELECT thread_id FROM {self.db.table(table)} WHERE interrupt_id = %s",
                    (interrupt_id,),
                )
                row = cursor.fetchone()
                if row is not None:
                    return str(row[0])
        return None

    def page(
        self,
        *,
        graph_id: str | None = None,
        node: str | None = None,
        role: str | None = None,
        assigned_to: str | None = None,
        search: str | None = None,
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
        counted = (  # the kept counts answer filters on graph, node and role alone
            f"SELECT COALESCE(SUM(open_count), 0) FROM {self.db.table(COUNTS)} "
            f"WHERE {' AND '.join(where) or '1 = 1'}",
            list(params),
        )
        if assigned_to is not None:
            where.append("assigned_to = %s")
            params.append(assigned_to)
        if search is not None:
            found, found_params = matching(self.db, self.db.table(QUEUE), search)
            where += found
            params += found_params
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
            "required_role, due_by, assigned_to, payload_digest, approvals_needed, "
            "approvals_given, namespace, title, bulk",
            where=where,
            params=params,
            keys=("raised_at", "interrupt_id"),
            descending=False,
            limit=limit,
            after=after,
            count=counted
            if assigned_to is None and search is None and min_age_seconds is None and not overdue
            else None,
        )
        items = [_approval(row, now) for row in page.rows]
        return ApprovalsPage(items, page.total, page.next_cursor)


def _approval(row: Any, now: datetime) -> PendingApproval:
    raised_at, interrupt_id, thread_id, graph_id, node, payload, role, due_by, assigned = row[:9]
    digest, needed, given, namespace, title, bulk = row[9:]
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
        payload_digest=digest,
        approvals_needed=int(needed),
        approvals_given=int(given),
        namespace=namespace or "",
        title=title,
        bulk=bool(bulk),
    )
