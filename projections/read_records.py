"""Who saw what: one row per read on record (domain/oversight/read_log.py), for auditors
(`GET /audit/reads`), the oversight report's `reads` figure and a thread's page.

A read is recorded once per reader, thing read and window, so a row says: this reader
read this at least once in the window, first at `at`. Each row names the reader, the
kind of read (queue, payload, timeline, report, export), what was read (`target`), the
thread, interrupt and graph it showed, if any, and the channel (http, ui, cli).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from domain.oversight.read_log import READ_KINDS, ReadLog
from projections.database import Cursor, Database
from projections.log_reader import Entry
from projections.projection import Projection
from projections.rows import ReaderIndex, TableShape, select_in

READS = "holdpoint_read_records"


@dataclass(frozen=True)
class ReadRecord:
    """One read on record."""

    position: int
    seq: int  # its place among the reads of its event
    at: str
    window_start: str
    actor_id: str | None
    actor_role: str | None
    kind: str
    target: str
    via: str
    thread_id: str | None
    interrupt_id: str | None
    graph_id: str | None

    @property
    def cursor(self) -> str:
        return f"{self.position}-{self.seq}"

    def json(self) -> dict[str, Any]:
        return asdict(self) | {"cursor": self.cursor}


COLUMNS = ("originator_id", *(name for name in ReadRecord.__dataclass_fields__))
SHAPE = TableShape(READS, "originator_id", COLUMNS)
READER_INDEXES = (
    ReaderIndex(f"{READS}_thread", READS, "(thread_id, position)"),
    ReaderIndex(f"{READS}_actor", READS, "(actor_id, position)"),
    ReaderIndex(f"{READS}_at", READS, "(at)"),
)


class ReadRecordsProjection(Projection):
    name = "read_records"
    tables = (READS,)
    event_classes = (ReadLog.ReadsRecorded, ReadLog.MoreReadsRecorded)

    def create_tables(self, cursor: Cursor, db: Database) -> None:
        cursor.execute(
            f"CREATE TABLE IF NOT EXISTS {db.table(READS)} ("
            "originator_id TEXT NOT NULL, position BIGINT NOT NULL, seq INTEGER NOT NULL, "
            "at TEXT NOT NULL, window_start TEXT NOT NULL, actor_id TEXT, actor_role TEXT, "
            "kind TEXT NOT NULL, target TEXT NOT NULL, via TEXT NOT NULL, thread_id TEXT, "
            "interrupt_id TEXT, graph_id TEXT, PRIMARY KEY (position, seq))"
        )
        cursor.execute(  # the projection's own loads use it: kept through a rebuild
            f"CREATE INDEX IF NOT EXISTS {READS}_originator ON {db.table(READS)} (originator_id)"
        )
        for index in READER_INDEXES:
            index.create(cursor, db)

    def clear(self, cursor: Cursor, db: Database) -> None:
        for index in READER_INDEXES:
            index.drop(cursor, db)
        db.clear_table(cursor, db.table(READS))

    def apply_batch(self, entries: Sequence[Entry], cursor: Cursor, db: Database) -> None:
        logs = {
            e.key: (e.event.actor, e.event.window_start)
            for e in entries
            if isinstance(e.event, ReadLog.ReadsRecorded)
        }
        unknown = {e.key for e in entries} - set(logs)
        for row in select_in(cursor, db, SHAPE, "originator_id", unknown):
            actor = {"id": row["actor_id"], "role": row["actor_role"]}
            logs[row["originator_id"]] = (actor, row["window_start"])
        rows = []
        for entry in entries:
            if entry.key not in logs:
                continue  # its first event could not be decoded (quarantined)
            actor, start = logs[entry.key]
            for seq, read in enumerate(entry.event.reads):
                rows.append(
                    (
                        entry.key,
                        entry.position,
                        seq,
                        entry.at,
                        start,
                        actor.get("id"),
                        actor.get("role"),
                        read["kind"],
                        read["target"],
                        read["via"],
                        read.get("thread_id"),
                        read.get("interrupt_id"),
                        read.get("graph_id"),
                    )
                )
        if rows:
            db.insert_many(cursor, db.table(READS), COLUMNS, rows)


class ReadRecords:
    """The reads on record, filtered."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def reads(
        self,
        *,
        thread_id: str | None = None,
        actor_id: str | None = None,
        kind: str | None = None,
        since: str | None = None,
        until: str | None = None,
        after: tuple[int, int] | None = None,
        limit: int = 100,
    ) -> list[ReadRecord]:
        """Oldest first, after the `(position, seq)` of `after`; `since` and `until` are
        read-model time text (`projections.timestamps.utc_text`), until excluded."""
        conditions = ["(position > %s OR (position = %s AND seq > %s))"]
        params: list[Any] = [after[0], after[0], after[1]] if after else [-1, -1, -1]
        for column, value in (("thread_id", thread_id), ("actor_id", actor_id), ("kind", kind)):
            if value is not None:
                conditions.append(f"{column} = %s")
                params.append(value)
        if since is not None:
            conditions.append("at >= %s")
            params.append(since)
        if until is not None:
            conditions.append("at < %s")
            params.append(until)
        columns = COLUMNS[1:]
        rows = self.db.statement(
            f"SELECT {', '.join(columns)} FROM {self.db.table(READS)} "
            f"WHERE {' AND '.join(conditions)} ORDER BY position, seq LIMIT {int(limit)}",
            params,
            write=False,
        )
        return [ReadRecord(*row) for row in rows]

    def latest(self, thread_id: str, limit: int) -> list[ReadRecord]:
        """The latest reads that showed the thread, newest first."""
        rows = self.db.statement(
            f"SELECT {', '.join(COLUMNS[1:])} FROM {self.db.table(READS)} WHERE thread_id = %s "
            f"ORDER BY position DESC, seq DESC LIMIT {int(limit)}",
            [thread_id],
            write=False,
        )
        return [ReadRecord(*row) for row in rows]


def read_figures(
    cursor: Cursor, db: Database, since: str, until: str, graph_id: str | None
) -> dict[str, Any]:
    """The oversight report's `reads`: the reads on record in the period, by kind and by
    reader (with a graph: only reads of that graph's threads and interrupts)."""
    graph = " AND graph_id = %s" if graph_id else ""
    params = [since, until, *([graph_id] if graph_id else [])]
    cursor.execute(
        f"SELECT kind, actor_id, COUNT(*), COUNT(DISTINCT thread_id) FROM {db.table(READS)} "
        f"WHERE at >= %s AND at < %s{graph} GROUP BY kind, actor_id ORDER BY kind, actor_id",
        params,
    )
    by_kind = dict.fromkeys(READ_KINDS, 0)
    by_reader: dict[str, int] = {}
    for kind, actor_id, count, _ in cursor.fetchall():
        by_kind[kind] = by_kind.get(kind, 0) + count
        name = actor_id or "(unknown)"
        by_reader[name] = by_reader.get(name, 0) + count
    cursor.execute(
        f"SELECT COUNT(DISTINCT thread_id) FROM {db.table(READS)} "
        f"WHERE at >= %s AND at < %s{graph} AND kind = 'payload'",
        params,
    )
    threads = cursor.fetchone()[0]
    return {
        "value": sum(by_kind.values()),
        "by_kind": by_kind,
        "by_reader": dict(sorted(by_reader.items())),
        "threads_with_payloads_read": threads,
        "how": "reads on record first made in the period (payloads, the queue, audit "
        "timelines, reports, evidence exports), each counted once per reader, thing read "
        "and window (GET /audit/reads lists them)",
    }
