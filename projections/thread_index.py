"""The thread index: search threads by graph, status, time and metadata.

Status follows the thread's events: `idle` when recorded and not yet run,
`running` after input or an answer, `interrupted` while interrupts are
pending, `failed` after a node or the run failed, `completed` when a run
reached its end, `cancelled` for good. LangGraph says `idle` for both a new
thread and a finished one (the HTTP API searches both for it): the index
tells them apart. A fork starts as the state it carried stood (`running` with
nodes left to run, else `idle`). Rows written before `completed` existed say
`idle` for a finished thread, and forks indexed before the index read their state
say `running`, until the index is rebuilt (`holdpoint projections rebuild
thread_index`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from domain.record.thread import WorkflowThread
from projections.database import Cursor, Database
from projections.decision_register import DECISIONS
from projections.log_reader import Entry
from projections.paging import keyset_page
from projections.projection import Projection
from projections.rows import ReaderIndex, Rows, TableShape, json_text
from projections.threads import STARTS
from projections.timestamps import utc_text

THREADS = "holdpoint_threads"
STATUSES = ("running", "interrupted", "completed", "failed", "cancelled", "idle")


class ThreadIndexProjection(Projection):
    name = "thread_index"
    tables = (THREADS,)
    thread_rows = ((THREADS, "originator_id"),)
    event_classes = (
        WorkflowThread.ThreadStarted,
        WorkflowThread.ThreadForked,
        WorkflowThread.InputReceived,
        WorkflowThread.NodeCompleted,
        WorkflowThread.NodeFailed,
        WorkflowThread.InterruptRaised,
        WorkflowThread.InterruptResumed,
        WorkflowThread.InterruptExpired,
        WorkflowThread.InterruptSuperseded,
        WorkflowThread.ThreadCompleted,
        WorkflowThread.ThreadFailed,
        WorkflowThread.ThreadCancelled,
        WorkflowThread.StateEdited,
        WorkflowThread.RunCancelled,
        WorkflowThread.MetadataUpdated,
    )

    def create_tables(self, cursor: Cursor, db: Database) -> None:
        table = db.table(THREADS)
        cursor.execute(
            f"CREATE TABLE IF NOT EXISTS {table} ("
            "originator_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL UNIQUE, "
            "graph_id TEXT NOT NULL, status TEXT NOT NULL, created_at TEXT NOT NULL, "
            "updated_at TEXT NOT NULL, metadata TEXT NOT NULL, forked_from TEXT, "
            "started_by TEXT, pending INTEGER NOT NULL, position BIGINT NOT NULL)"
        )
        for index in READER_INDEXES:
            index.create(cursor, db)

    def clear(self, cursor: Cursor, db: Database) -> None:
        for index in READER_INDEXES:
            index.drop(cursor, db)
        db.clear_table(cursor, db.table(THREADS))

    def apply_batch(self, entries: Sequence[Entry], cursor: Cursor, db: Database) -> None:
        rows = Rows(SHAPE)
        rows.load(cursor, db, "originator_id", _continued(entries))
        for entry in entries:
            at = entry.at
            if issubclass(entry.cls, STARTS):
                event = entry.event
                forked = getattr(event, "source_thread_id", None)
                rows.put(
                    {
                        "originator_id": entry.key,
                        "thread_id": event.thread_id,
                        "graph_id": event.graph_id,
                        "status": _forked_status(event) if forked else "idle",
                        "created_at": at,
                        "updated_at": at,
                        "metadata": json_text(event.metadata, sort_keys=True),
                        "forked_from": forked,
                        "started_by": event.actor.get("id"),
                        "pending": 0,
                        "position": entry.position,
                    }
                )
                continue
            row = rows.get(entry.key)
            if row is not None and issubclass(entry.cls, WorkflowThread.MetadataUpdated):
                merged = {**json.loads(row["metadata"]), **entry.event.metadata}
                row["metadata"] = json_text(merged, sort_keys=True)
                row["updated_at"], row["position"] = at, entry.position
                continue
            if row is None or not _changes_status(entry):
                continue
            row["status"], row["pending"] = _next_status(entry.cls, row["status"], row["pending"])
            row["updated_at"], row["position"] = at, entry.position
        rows.write(cursor, db)


READER_INDEXES = (  # (a batch loads rows by their primary key)
    ReaderIndex(f"{THREADS}_created", THREADS, "(created_at, thread_id)"),
    ReaderIndex(f"{THREADS}_updated", THREADS, "(updated_at, thread_id)"),
    ReaderIndex(f"{THREADS}_graph", THREADS, "(graph_id, status, created_at)"),
    ReaderIndex(  # a thread's forks (lineage)
        f"{THREADS}_forked", THREADS, "(forked_from) WHERE forked_from IS NOT NULL"
    ),
)
SHAPE = TableShape(
    THREADS,
    "originator_id",
    (
        "originator_id",
        "thread_id",
        "graph_id",
        "status",
        "created_at",
        "updated_at",
        "metadata",
        "forked_from",
        "started_by",
        "pending",
        "position",
    ),
)


def _continued(entries: Sequence[Entry]) -> set[str]:
    """The threads a batch continues (rather than starts), whose rows must be loaded."""
    started = {entry.key for entry in entries if issubclass(entry.cls, STARTS)}
    return {entry.key for entry in entries if entry.key not in started}


def _changes_status(entry: Entry) -> bool:
    """Whether the event changes the status (only an expiry's JSON is read to tell)."""
    if issubclass(entry.cls, WorkflowThread.InterruptExpired):
        return bool(entry.event.rule["action"] == "decide")  # an escalation leaves it pending
    return True


def _forked_status(event: Any) -> str:
    """A fork's status as the state it carried stood: `failed` (a LangGraph graph's thread
    copied after its run failed), `running` with nodes left to run, else `idle`. Its
    questions, asked again, follow as their own events."""
    state = event.state
    if state.get("error"):
        return "failed"
    return "running" if state.get("next") else "idle"


def _next_status(cls: type, status: str, pending: int) -> tuple[str, int]:
    """The thread's status and count of pending interrupts after an event of `cls`."""
    if issubclass(cls, WorkflowThread.InputReceived):
        return "running", pending
    if issubclass(cls, WorkflowThread.NodeCompleted):
        return ("running" if status == "failed" else status), pending
    if issubclass(cls, WorkflowThread.NodeFailed | WorkflowThread.ThreadFailed):
        return "failed", pending
    if issubclass(cls, WorkflowThread.InterruptRaised):
        return "interrupted", pending + 1
    if issubclass(
        cls,
        WorkflowThread.InterruptResumed
        | WorkflowThread.InterruptExpired
        | WorkflowThread.InterruptSuperseded,
    ):
        return ("interrupted" if pending > 1 else "running"), pending - 1
    if issubclass(cls, WorkflowThread.ThreadCompleted):
        return "completed", pending
    if issubclass(cls, WorkflowThread.ThreadCancelled):
        return "cancelled", pending
    if issubclass(cls, WorkflowThread.RunCancelled):  # its pending nodes wait for a run
        return ("interrupted" if pending else "idle"), pending
    return status, pending  # StateEdited: a human changed values, not the status


@dataclass(frozen=True)
class ThreadSummary:
    thread_id: str
    graph_id: str
    status: str
    created_at: str
    updated_at: str
    metadata: dict[str, Any]
    forked_from: str | None
    started_by: str | None
    open_interrupts: int = 0  # raised and not yet answered, expired or cancelled


@dataclass(frozen=True)
class ThreadsPage:
    items: list[ThreadSummary]
    total: int
    next_cursor: str | None


class ThreadIndex:
    """Search threads, newest first, with a keyset cursor."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def forks_of(self, thread_id: str) -> list[str]:
        """The threads forked from `thread_id`, oldest first."""
        with self.db.transaction(write=False) as cursor:
            cursor.execute(
                f"SELECT thread_id FROM {self.db.table(THREADS)} WHERE forked_from = %s "
                "ORDER BY created_at, thread_id",
                [thread_id],
            )
            return [str(row[0]) for row in cursor.fetchall()]

    def get(self, thread_id: str) -> ThreadSummary | None:
        """The thread's row, or None if the index has none."""
        with self.db.transaction(write=False) as cursor:
            cursor.execute(
                f"SELECT {COLUMNS} FROM {self.db.table(THREADS)} WHERE thread_id = %s", [thread_id]
            )
            row = cursor.fetchone()
        return None if row is None else _summary(row)

    def recorded(self, thread_ids: Sequence[str]) -> set[str]:
        """Which of `thread_ids` the index has."""
        found: set[str] = set()
        with self.db.transaction(write=False) as cursor:
            for start in range(0, len(thread_ids), 500):
                batch = thread_ids[start : start + 500]
                cursor.execute(
                    f"SELECT thread_id FROM {self.db.table(THREADS)} "
                    f"WHERE thread_id IN ({', '.join(['%s'] * len(batch))})",
                    list(batch),
                )
                found.update(str(row[0]) for row in cursor.fetchall())
        return found

    def search(
        self,
        *,
        graph_id: str | None = None,
        status: str | Sequence[str] | None = None,
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        metadata: dict[str, str] | None = None,
        updated_after: datetime | None = None,
        updated_before: datetime | None = None,
        decided_by: str | None = None,
        limit: int = 50,
        after: str | None = None,
        sort_by: str = "created_at",
        descending: bool = True,
    ) -> ThreadsPage:
        """Threads in the order of `sort_by` (one of `SORT_KEYS`, then the thread id;
        newest first by default), `limit` a page, after the cursor `after` (a page's
        `next_cursor`): of `graph_id`, in `status` (one, or any of several), created
        at or after `created_after` and before `created_before` (UTC when naive),
        with every `metadata` key equal to its value as JSON text (strings bare), last
        changed in [`updated_after`, `updated_before`), and with a decision by the
        principal `decided_by` on one of its interrupts (the decision register's)."""
        if sort_by not in SORT_KEYS:
            msg = f"Unknown sort key {sort_by!r}: use one of {', '.join(SORT_KEYS)}"
            raise ValueError(msg)
        statuses = (status,) if isinstance(status, str) else tuple(status or ())
        for name in statuses:
            if name not in STATUSES:
                msg = f"Unknown status {name!r}: use one of {', '.join(STATUSES)}"
                raise ValueError(msg)
        where: list[str] = []
        params: list[Any] = []
        if graph_id is not None:
            where.append("graph_id = %s")
            params.append(graph_id)
        if statuses:
            where.append(f"status IN ({', '.join(['%s'] * len(statuses))})")
            params += statuses
        if created_after is not None:
            where.append("created_at >= %s")
            params.append(utc_text(_utc(created_after)))
        if created_before is not None:
            where.append("created_at < %s")
            params.append(utc_text(_utc(created_before)))
        for key, value in (metadata or {}).items():
            where.append(self._metadata_equals())
            params += [key, str(value)]
        for clause, moment in (
            ("updated_at >= %s", updated_after),
            ("updated_at < %s", updated_before),
        ):
            if moment is not None:
                where.append(clause)
                params.append(utc_text(_utc(moment)))
        if decided_by is not None:
            decisions = self.db.table(DECISIONS)
            where.append(f"thread_id IN (SELECT thread_id FROM {decisions} WHERE decider_id = %s)")
            params.append(decided_by)
        key = SORT_KEYS[sort_by]
        page = keyset_page(
            self.db,
            table=self.db.table(THREADS),
            columns=f"{key}, thread_id, {COLUMNS}",
            where=where,
            params=params,
            keys=(key, "thread_id"),
            descending=descending,
            limit=limit,
            after=after,
        )
        rows = [_summary(row[2:]) for row in page.rows]
        return ThreadsPage(rows, page.total, page.next_cursor)

    def _metadata_equals(self) -> str:
        """A metadata value compared as its JSON text (true, 1.5, or the string)."""
        if self.db.dialect == "postgres":
            return "(metadata::jsonb ->> %s) = %s"
        return (
            "(SELECT CASE json_type(metadata, p) WHEN 'true' THEN 'true' "
            "WHEN 'false' THEN 'false' ELSE CAST(json_extract(metadata, p) AS TEXT) END "
            "FROM (SELECT '$.' || %s AS p)) = %s"
        )


# What a search may order by, as SQL: a status as the LangGraph API names it (`busy`,
# `error`, `idle` for a completed thread too), so that the order is the one a client sees.
SORT_KEYS = {
    "created_at": "created_at",
    "updated_at": "updated_at",
    "thread_id": "thread_id",
    "status": "CASE status WHEN 'running' THEN 'busy' WHEN 'completed' THEN 'idle' "
    "WHEN 'failed' THEN 'error' ELSE status END",
}
# After the sort key and the thread id, which a page's cursor is read from (`keyset_page`).
COLUMNS = (
    "created_at, thread_id, graph_id, status, updated_at, metadata, forked_from, started_by, "
    "pending"
)


def _summary(row: Any) -> ThreadSummary:
    created_at, thread_id, graph_id, status, updated_at, metadata, forked, started, pending = row
    return ThreadSummary(
        thread_id=thread_id,
        graph_id=graph_id,
        status=status,
        created_at=created_at,
        updated_at=updated_at,
        metadata=json.loads(metadata),
        forked_from=forked,
        started_by=started,
        open_interrupts=0 if status == "cancelled" else int(pending),  # a cancel closes them
    )


def _utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
