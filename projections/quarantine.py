"""Events the projector cannot decode: quarantined, not fatal.

An event whose stored state cannot be made into its event (JSON cut short or
altered, a topic that names no class, a state missing a field: see
`persistence.event_mapper.UndecodableEventError`) would stop a projector that
tried to apply it, and with it every read model of every thread. Instead the
runner records it here and passes it by: the read models' positions move past
it, and every other event is applied as usual.

`holdpoint_quarantine` holds one row per such event, keyed by its position in
the log, beside the read models (the same SQLite file or PostgreSQL schema as
the events), written in the transaction of the batch that met it. A batch
re-reads its whole range of positions, so the table says exactly what is
undecodable there now: seen again (a rebuild, another runner) an event keeps
its row and when it was first seen; one that decodes now (the row was
repaired) loses it. `/readyz` names the quarantined events, `/metrics` counts
them, and `holdpoint verify` says what is wrong with each (the quarantine
only says that it could not be read).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from projections.database import Cursor, Database

QUARANTINE = "holdpoint_quarantine"
COLUMNS = (
    "position",
    "originator_id",
    "thread_id",
    "originator_version",
    "topic",
    "error",
    "first_seen_at",
)


@dataclass(frozen=True)
class QuarantinedEvent:
    """One event the read models passed by because it cannot be decoded."""

    position: int
    originator_id: str  # the aggregate's UUID, as hex
    thread_id: str | None  # None: not a thread's event, or its thread cannot be told
    originator_version: int
    topic: str
    error: str
    first_seen_at: str  # read-model text (`projections.timestamps.utc_text`)

    @property
    def event_name(self) -> str:
        return self.topic.rpartition(":")[2].rpartition(".")[2]

    def line(self) -> str:
        """One line for a person: where the event is, and why it was passed by."""
        whose = (
            f"thread {self.thread_id!r}" if self.thread_id else f"aggregate {self.originator_id}"
        )
        return (
            f"position {self.position} ({whose}, version {self.originator_version}, "
            f"{self.event_name}): {self.error}"
        )


def create_tables(cursor: Cursor, db: Database) -> None:
    """Create the quarantine table if it does not exist (runner setup, `holdpoint db init`)."""
    cursor.execute(
        f"CREATE TABLE IF NOT EXISTS {db.table(QUARANTINE)} ("
        "position BIGINT PRIMARY KEY, originator_id TEXT NOT NULL, thread_id TEXT, "
        "originator_version BIGINT NOT NULL, topic TEXT NOT NULL, error TEXT NOT NULL, "
        "first_seen_at TEXT NOT NULL)"
    )


def record_batch(
    cursor: Cursor, db: Database, after: int, upto: int, found: Sequence[QuarantinedEvent]
) -> None:
    """What one batch read at positions (after, upto] says: `found` are undecodable there
    (each recorded once; an event seen before keeps its row), and no other event is."""
    table = db.table(QUARANTINE)
    kept = [event.position for event in found]
    spared = f" AND position NOT IN ({', '.join(['%s'] * len(kept))})" if kept else ""
    cursor.execute(
        f"DELETE FROM {table} WHERE position > %s AND position <= %s{spared}", (after, upto, *kept)
    )
    for event in found:
        cursor.execute(
            f"INSERT INTO {table} ({', '.join(COLUMNS)}) VALUES ({', '.join(['%s'] * 7)}) "
            "ON CONFLICT (position) DO NOTHING",
            (
                event.position,
                event.originator_id,
                event.thread_id,
                event.originator_version,
                event.topic,
                event.error,
                event.first_seen_at,
            ),
        )


class Quarantine:
    """The quarantined events, as readers see them."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def events(self, limit: int = 100) -> list[QuarantinedEvent]:
        """The first `limit` quarantined events, in log order."""
        with self.db.transaction(write=False) as cursor:
            cursor.execute(
                f"SELECT {', '.join(COLUMNS)} FROM {self.db.table(QUARANTINE)} "
                "ORDER BY position LIMIT %s",
                (limit,),
            )
            rows = cursor.fetchall()
        return [_event(row) for row in rows]

    def of_thread(self, thread_id: str) -> list[QuarantinedEvent]:
        """The quarantined events of one thread, in log order."""
        with self.db.transaction(write=False) as cursor:
            cursor.execute(
                f"SELECT {', '.join(COLUMNS)} FROM {self.db.table(QUARANTINE)} "
                "WHERE thread_id = %s ORDER BY position",
                (thread_id,),
            )
            return [_event(row) for row in cursor.fetchall()]

    def count(self) -> int:
        with self.db.transaction(write=False) as cursor:
            cursor.execute(f"SELECT count(*) FROM {self.db.table(QUARANTINE)}")
            return int(cursor.fetchone()[0])


def _event(row: Sequence[Any]) -> QuarantinedEvent:
    position, originator_id, thread_id, version, topic, error, first_seen_at = row
    return QuarantinedEvent(
        int(position),
        str(originator_id),
        thread_id,
        int(version),
        str(topic),
        str(error),
        str(first_seen_at),
    )
