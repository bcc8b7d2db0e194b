"""The notification log as a projector reads it: positions and decoded events.

A projector reads every event once, so reading and decoding is half of a
rebuild's cost. On SQLite and PostgreSQL the log is read here with one SQL
query per batch, through the read models' own connection, filtered to the
topics the read models follow, and decoded with `orjson`: the library's
`select_notifications` and mapper would build a `Notification` and run the
JSON decoder's object hook on every dict of every event, for the same
result. Events are built exactly as the library's mapper builds them
(`originator_id`, `originator_version`, upcasting by `class_version`), and
any event whose JSON holds a typed value other than the top-level timestamp,
or a store with a cipher or compressor, is decoded by the library's mapper.
The memory store has no SQL: it is read through the library.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any
from uuid import UUID

import orjson
from eventsourcing.persistence import StoredEvent
from eventsourcing.utils import resolve_topic

from domain.application import Workflows
from projections.database import Database

Entry = tuple[int, str, Any]  # (position, topic, event)
TYPED_VALUE = b'"_type_"'


class LogReader:
    """Reads the events of `topics` recorded at positions in (after, upto]."""

    def __init__(self, store: Workflows, db: Database) -> None:
        self.store = store
        self.db = db
        self._sql = _select_statement(store, db)
        mapper = store.mapper
        self._plain = mapper.cipher is None and mapper.compressor is None

    def read(self, after: int, upto: int, topics: Collection[str]) -> list[Entry]:
        if upto <= after or not topics:
            return []
        if self._sql is None:
            return self._read_through_library(after, upto, topics)
        wanted = sorted(topics)
        with self.db.transaction(write=False) as cursor:
            if self.db.dialect == "postgres":
                cursor.execute(self._sql, (after, upto, wanted))
            else:
                marks = ", ".join(["%s"] * len(wanted))
                cursor.execute(self._sql.format(topics=marks), (after, upto, *wanted))
            rows = cursor.fetchall()
        return [(position, topic, self._decode(topic, *rest)) for position, topic, *rest in rows]

    def _read_through_library(self, after: int, upto: int, topics: Collection[str]) -> list[Entry]:
        notifications = self.store.recorder.select_notifications(
            start=after + 1, limit=upto - after, stop=upto, topics=list(topics)
        )
        decode = self.store.mapper.to_domain_event
        return [(n.id, n.topic, decode(n)) for n in notifications]

    def _decode(self, topic: str, originator_id: Any, version: int, state: bytes) -> Any:
        """The domain event of one stored record, as the library's mapper would build it."""
        data = orjson.loads(state) if self._plain else None
        stamp = data.get("timestamp") if data is not None else None
        typed = state.count(TYPED_VALUE) if data is not None else -1
        if not (isinstance(stamp, dict) and stamp.get("_type_") == "datetime_iso" and typed == 1):
            stored = StoredEvent(originator_id, version, topic, bytes(state))
            return self.store.mapper.to_domain_event(stored)
        data["timestamp"] = datetime.fromisoformat(stamp["_data_"])
        data["originator_id"] = (
            originator_id if isinstance(originator_id, UUID) else UUID(originator_id)
        )
        data["originator_version"] = version
        cls = resolve_topic(topic)
        class_version = getattr(cls, "class_version", 1)
        from_version = data.pop("class_version", 1)
        while from_version < class_version:
            getattr(cls, f"upcast_v{from_version}_v{from_version + 1}")(data)
            from_version += 1
        event = object.__new__(cls)
        object.__setattr__(event, "__dict__", data)
        return event


def _select_statement(store: Workflows, db: Database) -> str | None:
    """The batch query over the store's events table, or None for the memory store."""
    table = getattr(store.recorder, "events_table_name", None)
    if table is None or db.dialect not in {"sqlite", "postgres"}:
        return None
    if db.dialect == "postgres":
        return (
            "SELECT notification_id, topic, originator_id, originator_version, state "
            f"FROM {db.table(table)} WHERE notification_id > %s AND notification_id <= %s "
            "AND topic = ANY(%s) ORDER BY notification_id"
        )
    return (
        "SELECT rowid, topic, originator_id, originator_version, state "
        f"FROM {table} WHERE rowid > %s AND rowid <= %s AND topic IN ({{topics}}) ORDER BY rowid"
    )
