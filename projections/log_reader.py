"""The notification log as a projector reads it: positions, decoded events, their threads.

A projector reads every event once, so reading and decoding is a large part
of a rebuild's cost. On SQLite and PostgreSQL the log is read here with one
SQL query per batch, through the read models' own connection, filtered to
the topics the read models follow (the library's `select_notifications`
would build a `Notification` for each), and decoded by the store's mapper's
fast path (`persistence/event_mapper.py`: orjson, the same events as the library's).
The memory store has no SQL: it is read through the library.

Each event is read once per batch for every read model, so what they all
need is worked out here, once: its class, the originator's key (its UUID's
hex), the event's time as read-model text (cut from the JSON's first bytes)
and its thread (see `ThreadDirectory`). The event itself is decoded only when
a read model first asks for it: many are needed for their class and time alone.
Events of the topics given as `bodies`, which the read models always ask for,
are decoded as they are read: on PostgreSQL by the thread that reads the next
batch ahead, while this one's rows are written, off the projector's path.
"""

from __future__ import annotations

from collections.abc import Collection
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any
from uuid import UUID

import psycopg
from eventsourcing.persistence import StoredEvent
from eventsourcing.utils import resolve_topic

from domain.record.application import Workflows
from persistence.event_mapper import EventMapper
from projections.database import Database
from projections.threads import START_TOPICS, Thread, ThreadDirectory
from projections.timestamps import utc_text

# How the library's JSON begins for every event: its timestamp, as typed ISO text.
STAMP_PREFIX = b'{"timestamp":{"_type_":"datetime_iso","_data_":"'
STAMP_END = len(STAMP_PREFIX) + 32  # "2026-01-31T12:00:00.123456+00:00"


class Entry:
    """One event as the read models get it: position, topic, class, originator key, time,
    thread, and the event itself, decoded when first asked for.

    Many events matter to a read model by their class and time alone (the
    thread index's input and node events, most of a real log), so their JSON
    is never parsed; the others are decoded once, for every model.
    """

    __slots__ = ("_event", "_raw", "at", "cls", "key", "position", "thread", "topic")

    def __init__(
        self,
        position: int,
        topic: str,
        cls: type,
        key: str,
        at: str,
        event: Any = None,
        raw: tuple[LogReader, UUID, int, bytes] | None = None,
    ) -> None:
        self.position = position
        self.topic = topic
        self.cls = cls  # the event's class
        self.key = key  # the originator id's hex, as the read models key threads
        self.at = at  # the event's timestamp as read-model text (`utc_text`)
        self._event = event
        self._raw = raw  # what to decode the event from, until it is
        self.thread: Thread | None = None  # set by the reader: None if it has no thread

    @property
    def event(self) -> Any:
        event = self._event
        return self.decode() if event is None else event

    def decode(self) -> Any:
        """Decode the event now (once), and return it."""
        event = self._event
        if event is None:
            reader, uuid, version, state = self._raw  # type: ignore[misc]
            self._event = event = reader.decode(self.topic, uuid, version, state)
            self._raw = None
        return event

    def __repr__(self) -> str:
        return f"Entry({self.position}, {self.topic!r}, {self.key!r})"


class LogReader:
    """Reads the events of `topics` recorded at positions in (after, upto]; those of
    `bodies` decoded at once, the others when first asked for."""

    def __init__(self, store: Workflows, db: Database, bodies: Collection[str] = ()) -> None:
        self.store = store
        self.db = db
        self.bodies = START_TOPICS | frozenset(bodies)  # the thread directory reads starts
        self._sql = _select_statement(store, db)
        mapper = store.mapper
        self._plain = mapper.cipher is None and mapper.compressor is None
        self._fast = mapper if isinstance(mapper, EventMapper) else None
        self.threads = ThreadDirectory(store, db)
        self._classes: dict[str, type] = {}
        self._ahead_thread: ThreadPoolExecutor | None = None
        self._ahead: tuple[int, int, list[str], Future[list[Entry]]] | None = None

    def read(
        self, after: int, upto: int, topics: Collection[str], next_upto: int = 0
    ) -> list[Entry]:
        """The entries of `topics` at positions in (after, upto], in log order.

        `next_upto`: the end of the range the caller will read next, from
        `upto` (a catch-up's next batch), if any. On PostgreSQL that range is
        then read meanwhile, by a thread on a connection of its own, while the
        caller applies this one: the server reads as the projector writes.
        """
        if upto <= after or not topics:
            return []
        if self._sql is None:
            entries = self._read_through_library(after, upto, topics)
        else:
            wanted = sorted(topics)
            entries = self._read_ahead(after, upto, wanted) or self._select(after, upto, wanted)
            if next_upto <= upto or not self.read_ahead(upto, next_upto, topics):
                self._stop_reading_ahead()
        self.threads.resolve(entries)
        return entries

    def read_ahead(self, after: int, upto: int, topics: Collection[str]) -> bool:
        """Start reading (after, upto] meanwhile, for the next `read` from `after` (on
        PostgreSQL; elsewhere nothing is read, and False is returned)."""
        if self._sql is None or self.db.dialect != "postgres" or upto <= after or not topics:
            return False
        self._start_reading_ahead(after, upto, sorted(topics))
        return True

    def close(self) -> None:
        """Stop the thread that reads ahead, and close its connection."""
        self._stop_reading_ahead()

    def _select(self, after: int, upto: int, wanted: list[str]) -> list[Entry]:
        """The entries in (after, upto], read with one query, their threads not yet set."""
        query = self._sql or ""
        with self.db.transaction(write=False) as cursor:
            if self.db.dialect == "postgres":  # binary: the states as sent, not hex text
                cursor.execute(query, (after, upto, wanted), binary=True)  # type: ignore[call-arg]
            else:
                marks = ", ".join(["%s"] * len(wanted))
                cursor.execute(query.format(topics=marks), (after, upto, *wanted))
            rows = cursor.fetchall()
        originators: dict[Any, tuple[UUID, str]] = {}  # one batch's
        entries = [self._entry(originators, *row) for row in rows]
        bodies = self.bodies
        for entry in entries:
            if entry.topic in bodies:
                entry.decode()
        return entries

    def _start_reading_ahead(self, after: int, upto: int, wanted: list[str]) -> None:
        if self._ahead is not None:  # a range no read asked for (a catch-up that failed)
            self._ahead[3].cancel()
        if self._ahead_thread is None:
            self._ahead_thread = ThreadPoolExecutor(1, thread_name_prefix="projections-read")
        reading = self._ahead_thread.submit(self._select, after, upto, wanted)
        self._ahead = (after, upto, wanted, reading)

    def _read_ahead(self, after: int, upto: int, wanted: list[str]) -> list[Entry] | None:
        """The entries read ahead, if they start at `after` (None otherwise); those past
        `upto` left out, those up to it that were not read ahead read now."""
        if self._ahead is None:
            return None
        ahead_after, ahead_upto, ahead_wanted, reading = self._ahead
        self._ahead = None
        try:
            entries = reading.result()
        except psycopg.Error:  # read again below, on this thread's connection
            return None
        if ahead_after != after or ahead_wanted != wanted:
            return None  # another runner moved the positions: a range of no use
        if ahead_upto < upto:
            return entries + self._select(ahead_upto, upto, wanted)
        return [entry for entry in entries if entry.position <= upto]

    def _stop_reading_ahead(self) -> None:
        if self._ahead is not None:
            self._ahead[3].cancel()
            self._ahead = None
        worker, self._ahead_thread = self._ahead_thread, None
        if worker is not None:
            # The database's connections are per thread: close the worker's, on the worker.
            worker.submit(self.db.close).result()
            worker.shutdown()

    def _read_through_library(self, after: int, upto: int, topics: Collection[str]) -> list[Entry]:
        notifications = self.store.recorder.select_notifications(
            start=after + 1, limit=upto - after, stop=upto, topics=list(topics)
        )
        decode = self.store.mapper.to_domain_event
        return [_decoded(n.id, n.topic, decode(n)) for n in notifications]

    def _entry(
        self,
        originators: dict[Any, tuple[UUID, str]],
        position: int,
        topic: str,
        originator_id: Any,
        version: int,
        state: bytes,
    ) -> Entry:
        """The entry of one stored record: its time cut from the JSON's first bytes, the
        rest left to decode (the hot path of a rebuild: a dict lookup per topic and per
        originator, no JSON parsed)."""
        found = originators.get(originator_id)
        if found is None:
            uuid = originator_id if isinstance(originator_id, UUID) else UUID(originator_id)
            originators[originator_id] = found = (uuid, uuid.hex)
        uuid, key = found
        cls = self._classes.get(topic) or self._class(topic)
        if self._plain and state[STAMP_END : STAMP_END + 1] == b'"':
            iso = bytes(state[len(STAMP_PREFIX) : STAMP_END]).decode()
            if state.startswith(STAMP_PREFIX) and iso[19] == "." and iso.endswith("+00:00"):
                return Entry(
                    position, topic, cls, key, iso[:26] + "Z", raw=(self, uuid, version, state)
                )
        return _decoded(position, topic, self.decode(topic, uuid, version, state))

    def decode(self, topic: str, uuid: UUID, version: int, state: bytes) -> Any:
        """One stored event, built as the library's mapper would build it (by the store's
        mapper: its fast path where that applies, `persistence/event_mapper.py`)."""
        if self._fast is not None:  # its fast path tried once, then the library's
            return self._fast.event_of(topic, uuid, version, state)
        return self.store.mapper.to_domain_event(StoredEvent(uuid, version, topic, bytes(state)))

    def _class(self, topic: str) -> type:
        cls: type = resolve_topic(topic)
        self._classes[topic] = cls
        return cls


def _decoded(position: int, topic: str, event: Any) -> Entry:
    key, at = event.originator_id.hex, utc_text(event.timestamp)
    return Entry(position, topic, type(event), key, at, event=event)


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
