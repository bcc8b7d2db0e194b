"""The notification log as a projector reads it: positions, decoded events, their threads.

A projector reads every event once, so reading and decoding is a large part
of a rebuild's cost. On SQLite and PostgreSQL the log is read here with one
SQL query per batch, through the read models' own connection (the library's
`select_notifications` would build a `Notification` for each), and decoded by
the store's mapper's fast path (`persistence/event_mapper.py`: orjson, the
same events as the library's). The memory store has no SQL: it is read
through the library.

Each event is read once per batch for every read model, so what they all
need is worked out here, once: its class, the originator's key (its UUID's
hex), the event's time as read-model text (cut from the JSON's first bytes)
and its thread (see `ThreadDirectory`).

Every event of the range is read and decoded, whatever its topic, as it is
read (on PostgreSQL by the thread that reads the next batch ahead, while
this one's rows are written): one that cannot be decoded is not given to the
read models but marked (`Entry.failure`), for the runner to quarantine
(`projections/quarantine.py`). Decoding the events that the read models need
only by their class and time costs a rebuild up to a tenth more than leaving them
undecoded did; in exchange a damaged event is found wherever it is, not
only where a read model happens to read its fields.
"""

from __future__ import annotations

from collections.abc import Collection
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any
from uuid import UUID

import psycopg
from eventsourcing.persistence import StoredEvent

from domain.record.application import Workflows
from persistence.event_mapper import EventMapper
from projections.database import Database
from projections.threads import Thread, ThreadDirectory
from projections.timestamps import utc_text

# How the library's JSON begins for every event: its timestamp, as typed ISO text.
STAMP_PREFIX = b'{"timestamp":{"_type_":"datetime_iso","_data_":"'
STAMP_END = len(STAMP_PREFIX) + 32  # "2026-01-31T12:00:00.123456+00:00"


class Undecodable:
    """The class of an entry whose event cannot be decoded (no read model follows it)."""


class Entry:
    """One event as the read models get it: position, topic, class, originator key, time,
    thread, and the event itself; or, if it cannot be decoded, why (`failure`)."""

    __slots__ = (
        "at",
        "cls",
        "event",
        "failure",
        "key",
        "position",
        "state",
        "thread",
        "topic",
        "version",
    )

    def __init__(
        self,
        position: int,
        topic: str,
        cls: type,
        key: str,
        at: str,
        event: Any = None,
        *,
        version: int = 0,
        failure: str | None = None,
        state: bytes = b"",
    ) -> None:
        self.position = position
        self.topic = topic
        self.cls = cls  # the event's class (`Undecodable` if it cannot be decoded)
        self.key = key  # the originator id's hex, as the read models key threads
        self.at = at  # the event's timestamp as read-model text (`utc_text`); "" if unknown
        self.event = event
        self.version = version  # the originator's version
        self.failure = failure  # why the event cannot be decoded; None when it was
        self.state = state  # the stored state of an event that cannot be decoded, else b""
        self.thread: Thread | None = None  # set by the reader: None if it has no thread

    def __repr__(self) -> str:
        return f"Entry({self.position}, {self.topic!r}, {self.key!r})"


class LogReader:
    """Reads the events recorded at positions in (after, upto], each decoded as it is read."""

    def __init__(self, store: Workflows, db: Database) -> None:
        self.store = store
        self.db = db
        self._sql = _select_statement(store, db)
        mapper = store.mapper
        self._plain = mapper.cipher is None and mapper.compressor is None
        self._fast = mapper if isinstance(mapper, EventMapper) else None
        self.threads = ThreadDirectory(store, db)
        self._ahead_thread: ThreadPoolExecutor | None = None
        self._ahead: tuple[int, int, Future[list[Entry]]] | None = None

    def read(
        self, after: int, upto: int, topics: Collection[str], next_upto: int = 0
    ) -> list[Entry]:
        """The entries of `topics` at positions in (after, upto], and every entry there
        whose event cannot be decoded (its `failure` set, whatever its topic), in log order.

        `next_upto`: the end of the range the caller will read next, from
        `upto` (a catch-up's next batch), if any. On PostgreSQL that range is
        then read meanwhile, by a thread on a connection of its own, while the
        caller applies this one: the server reads as the projector writes.
        """
        if upto <= after or not topics:
            return []
        if self._sql is None:
            read = self._read_through_library(after, upto)
        else:
            read = self._read_ahead(after, upto) or self._select(after, upto)
            if next_upto <= upto or not self.read_ahead(upto, next_upto, topics):
                self._stop_reading_ahead()
        entries = [entry for entry in read if entry.topic in topics or entry.failure is not None]
        self.threads.resolve(entries)
        return entries

    def read_ahead(self, after: int, upto: int, topics: Collection[str]) -> bool:
        """Start reading (after, upto] meanwhile, for the next `read` from `after` (on
        PostgreSQL; elsewhere nothing is read, and False is returned)."""
        if self._sql is None or self.db.dialect != "postgres" or upto <= after or not topics:
            return False
        self._start_reading_ahead(after, upto)
        return True

    def close(self) -> None:
        """Stop the thread that reads ahead, and close its connection."""
        self._stop_reading_ahead()

    def _select(self, after: int, upto: int) -> list[Entry]:
        """The entries in (after, upto], read with one query and decoded, their threads not
        yet set."""
        # One statement (on PostgreSQL one round trip); binary: the states as sent, not hex.
        rows = self.db.statement(self._sql or "", (after, upto), write=False, binary=True)
        originators: dict[Any, tuple[UUID, str]] = {}  # one batch's
        return [self._entry(originators, *row) for row in rows]

    def _start_reading_ahead(self, after: int, upto: int) -> None:
        if self._ahead is not None:  # a range no read asked for (a catch-up that failed)
            self._ahead[2].cancel()
        if self._ahead_thread is None:
            self._ahead_thread = ThreadPoolExecutor(1, thread_name_prefix="projections-read")
        reading = self._ahead_thread.submit(self._select, after, upto)
        self._ahead = (after, upto, reading)

    def _read_ahead(self, after: int, upto: int) -> list[Entry] | None:
        """The entries read ahead, if they start at `after` (None otherwise); those past
        `upto` left out, those up to it that were not read ahead read now."""
        if self._ahead is None:
            return None
        ahead_after, ahead_upto, reading = self._ahead
        self._ahead = None
        try:
            entries = reading.result()
        except psycopg.Error:  # read again below, on this thread's connection
            return None
        if ahead_after != after:
            return None  # another runner moved the positions: a range of no use
        if ahead_upto < upto:
            return entries + self._select(ahead_upto, upto)
        return [entry for entry in entries if entry.position <= upto]

    def _stop_reading_ahead(self) -> None:
        if self._ahead is not None:
            self._ahead[2].cancel()
            self._ahead = None
        worker, self._ahead_thread = self._ahead_thread, None
        if worker is not None:
            # The database's connections are per thread: close the worker's, on the worker.
            worker.submit(self.db.close).result()
            worker.shutdown()

    def _read_through_library(self, after: int, upto: int) -> list[Entry]:
        notifications = self.store.recorder.select_notifications(
            start=after + 1, limit=upto - after, stop=upto
        )
        originators: dict[Any, tuple[UUID, str]] = {}
        return [
            self._entry(originators, n.id, n.topic, n.originator_id, n.originator_version, n.state)
            for n in notifications
        ]

    def _entry(
        self,
        originators: dict[Any, tuple[UUID, str]],
        position: int,
        topic: str,
        originator_id: Any,
        version: int,
        state: bytes,
    ) -> Entry:
        """The entry of one stored record, decoded; its time cut from the JSON's first
        bytes where they hold it as the read models write times (the hot path of a
        rebuild: no datetime formatted)."""
        found = originators.get(originator_id)
        if found is None:
            uuid = originator_id if isinstance(originator_id, UUID) else UUID(str(originator_id))
            originators[originator_id] = found = (uuid, uuid.hex)
        uuid, key = found
        try:
            event = self.decode(topic, uuid, version, state)
        except Exception as error:  # whatever fails, the event cannot be decoded: quarantined
            why = getattr(error, "reason", None) or f"{type(error).__name__}: {error}"
            return Entry(
                position, topic, Undecodable, key, "", version=version, failure=why,
                state=bytes(state),
            )  # fmt: skip
        if self._plain and state[STAMP_END : STAMP_END + 1] == b'"':
            iso = bytes(state[len(STAMP_PREFIX) : STAMP_END]).decode()
            if state.startswith(STAMP_PREFIX) and iso[19] == "." and iso.endswith("+00:00"):
                return Entry(
                    position, topic, type(event), key, iso[:26] + "Z", event, version=version
                )
        at = utc_text(event.timestamp)
        return Entry(position, topic, type(event), key, at, event, version=version)

    def decode(self, topic: str, uuid: UUID, version: int, state: bytes) -> Any:
        """One stored event, built as the library's mapper would build it (by the store's
        mapper: its fast path where that applies, `persistence/event_mapper.py`)."""
        if self._fast is not None:  # its fast path tried once, then the library's
            return self._fast.event_of(topic, uuid, version, state)
        return self.store.mapper.to_domain_event(StoredEvent(uuid, version, topic, bytes(state)))


def _select_statement(store: Workflows, db: Database) -> str | None:
    """The batch query over the store's events table, or None for the memory store."""
    table = getattr(store.recorder, "events_table_name", None)
    if table is None or db.dialect not in {"sqlite", "postgres"}:
        return None
    if db.dialect == "postgres":
        return (
            "SELECT notification_id, topic, originator_id, originator_version, state "
            f"FROM {db.table(table)} WHERE notification_id > %s AND notification_id <= %s "
            "ORDER BY notification_id"
        )
    return (
        "SELECT rowid, topic, originator_id, originator_version, state "
        f"FROM {table} WHERE rowid > %s AND rowid <= %s ORDER BY rowid"
    )
