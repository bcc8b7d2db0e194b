"""Which thread an event belongs to, found once for every read model.

A thread's first event (version 1 of its aggregate: ThreadStarted, or
ThreadForked for a fork) names its thread id and graph id, and that never
changes. So the log reader remembers them as it reads the starts, and looks
up the first event of a thread it has not seen (a projector that starts
behind a thread's start) in the store's events table, by its primary key.
The read models then need no map of their own from originator to thread.
An event of another aggregate has no thread (None): one that creates its
aggregate (a refused attempt's `AccessRefused`, the only event of its own
aggregate) says so by its class alone, without a lookup.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple, Protocol
from uuid import UUID

import orjson
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import StoredEvent
from eventsourcing.utils import get_topic

from domain.record.application import Workflows
from domain.record.thread import WorkflowThread
from projections.database import Database

STARTS = (WorkflowThread.ThreadStarted, WorkflowThread.ThreadForked)
START_TOPICS = frozenset(get_topic(cls) for cls in STARTS)
CAPACITY = 100_000  # threads remembered (~30 MB); past it, forgotten at once, looked up again
LOOKUP_CHUNK = 500


class Thread(NamedTuple):
    thread_id: str
    graph_id: str


class Resolvable(Protocol):
    """An entry of the log as the directory reads and marks it (`log_reader.Entry`)."""

    cls: type
    key: str
    thread: Thread | None

    @property
    def event(self) -> Any: ...


class ThreadDirectory:
    """Originator key (its UUID's hex) -> Thread, from the log's thread starts."""

    def __init__(self, store: Workflows, db: Database, capacity: int = CAPACITY) -> None:
        self.store = store
        self.db = db
        self.capacity = capacity
        self._known: dict[str, Thread] = {}
        self._sql = _lookup_statement(store, db)

    def resolve(self, entries: Sequence[Resolvable]) -> None:
        """Set each entry's `thread` (None for an originator that started no thread)."""
        if len(self._known) > self.capacity:
            self._known.clear()
        known, missing = self._known, set()
        for entry in entries:
            if issubclass(entry.cls, STARTS):
                event = entry.event
                known[entry.key] = Thread(event.thread_id, event.graph_id)
            elif entry.key not in known and not issubclass(entry.cls, Aggregate.Created):
                missing.add(entry.key)  # (a creation that starts no thread: none to look up)
        if missing:
            for key, thread in self._look_up(missing):
                known[key] = thread
        for entry in entries:
            entry.thread = known.get(entry.key)

    def _look_up(self, keys: Iterable[str]) -> list[tuple[str, Thread]]:
        """The threads of `keys`, from their first events (absent: not a thread)."""
        wanted = sorted(keys)
        if self._sql is None:
            recorder = self.store.recorder
            stored = [e for key in wanted for e in recorder.select_events(UUID(key), lte=1)]
        else:
            stored = []
            for start in range(0, len(wanted), LOOKUP_CHUNK):
                chunk = wanted[start : start + LOOKUP_CHUNK]
                with self.db.transaction(write=False) as cursor:
                    if self.db.dialect == "postgres":
                        cursor.execute(self._sql, ([UUID(key) for key in chunk],))
                    else:
                        marks = ", ".join(["%s"] * len(chunk))
                        cursor.execute(self._sql.format(keys=marks), chunk)
                    stored += [
                        StoredEvent(oid, version, topic, bytes(state))
                        for oid, version, topic, state in cursor.fetchall()
                    ]
        return [found for s in stored if (found := self._thread_of(s)) is not None]

    def _thread_of(self, stored: StoredEvent) -> tuple[str, Thread] | None:
        mapper = self.store.mapper
        if stored.topic not in START_TOPICS:
            return None
        key = UUID(str(stored.originator_id)).hex
        try:
            if mapper.cipher is None and mapper.compressor is None:
                data: dict[str, Any] = orjson.loads(stored.state)
                return key, Thread(data["thread_id"], data["graph_id"])
            event: Any = mapper.to_domain_event(stored)
            return key, Thread(event.thread_id, event.graph_id)
        except Exception:  # a start that cannot be decoded (quarantined): no thread known
            return None


def _lookup_statement(store: Workflows, db: Database) -> str | None:
    """The query of threads' first events, or None where the library must be asked."""
    recorder = store.recorder
    table = getattr(recorder, "events_table_name", None)
    datastore = getattr(recorder, "datastore", None)
    if table is None or db.dialect not in {"sqlite", "postgres"}:
        return None
    columns = "SELECT originator_id, originator_version, topic, state FROM"
    if db.dialect == "postgres":
        if getattr(datastore, "originator_id_type", "uuid") != "uuid":
            return None
        return (
            f"{columns} {db.table(table)} WHERE originator_id = ANY(%s) AND originator_version = 1"
        )
    return f"{columns} {table} WHERE originator_id IN ({{keys}}) AND originator_version = 1"
