"""Threads created over HTTP before they have a graph to run, kept in the store.

LangGraph's `POST /threads` makes a thread with no graph; Holdpoint records a
thread (ThreadStarted) only with its graph. A thread created with a graph
(`metadata.graph_id`, what `threads.create(graph_id=...)` sends) is recorded
at once. One created without a graph is a reservation: a row of
`holdpoint_thread_reservations`, beside the read models (the same SQLite file
or PostgreSQL schema as the events), until its first run records the thread
and drops it. Any server process on the store serves a reserved thread, and a
reservation outlives a restart. A memory store keeps them in its private
database, for as long as the process lives.

A principal may hold at most `MAX_RESERVATIONS` reservations that never ran;
one more is refused (TooManyReservationsError: a 429 problem), never made by
forgetting an older one. The count and the insert share a transaction, but two
processes reserving at the same instant may each pass it once: the limit is a
guard against abuse, not an exact quota.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from domain.errors import ThreadExistsError
from projections.database import Cursor, Database
from service.errors import TooManyReservationsError

RESERVATIONS = "holdpoint_thread_reservations"
MAX_RESERVATIONS = 100_000  # per principal
SEEN_KEPT = 10_000  # reserved ids this process looked up, for `drop`
_COLUMNS = "thread_id, created_at, metadata, created_by"


@dataclass(frozen=True)
class Reservation:
    thread_id: str
    created_at: datetime
    metadata: dict[str, Any]
    created_by: str


def create_tables(cursor: Cursor, db: Database) -> None:
    """The reservations table and its indexes, if missing."""
    reservations = db.table(RESERVATIONS)
    cursor.execute(
        f"CREATE TABLE IF NOT EXISTS {reservations} ("
        "thread_id TEXT PRIMARY KEY, created_at DOUBLE PRECISION NOT NULL, "
        "metadata TEXT NOT NULL, created_by TEXT NOT NULL)"
    )
    cursor.execute(f"CREATE INDEX IF NOT EXISTS {RESERVATIONS}_by ON {reservations} (created_by)")
    cursor.execute(
        f"CREATE INDEX IF NOT EXISTS {RESERVATIONS}_created ON {reservations} (created_at)"
    )


class Reservations:
    """Thread ids taken over HTTP whose threads have not run yet, in one store's database."""

    def __init__(self, db: Database, *, limit: int = MAX_RESERVATIONS, create: bool = True) -> None:
        self.db = db
        self.limit = limit
        self._table = db.table(RESERVATIONS)
        self._seen: OrderedDict[str, None] = OrderedDict()  # ids `get` found reserved
        self._lock = threading.Lock()
        if create:
            with db.transaction() as cursor:
                create_tables(cursor, db)

    def add(self, thread_id: str, metadata: dict[str, Any], created_by: str) -> Reservation:
        """Reserve `thread_id`; raises ThreadExistsError if it is reserved already, and
        TooManyReservationsError if `created_by` holds `limit` reservations."""
        created = datetime.now(UTC).timestamp()  # as the row keeps it, to the microsecond
        reservation = Reservation(thread_id, _moment(created), metadata, created_by)
        with self.db.transaction() as cursor:
            cursor.execute(
                f"SELECT COUNT(*) FROM {self._table} WHERE created_by = %s", (created_by,)
            )
            if int(cursor.fetchone()[0]) >= self.limit:
                raise TooManyReservationsError(created_by, self.limit)
            cursor.execute(
                f"INSERT INTO {self._table} ({_COLUMNS}) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (thread_id) DO NOTHING",
                (thread_id, created, json.dumps(metadata), created_by),
            )
            if cursor.rowcount == 0:  # another request, maybe another process, came first
                raise ThreadExistsError(thread_id)
        return reservation

    def get(self, thread_id: str) -> Reservation | None:
        with self.db.transaction(write=False) as cursor:
            cursor.execute(
                f"SELECT {_COLUMNS} FROM {self._table} WHERE thread_id = %s", (thread_id,)
            )
            row = cursor.fetchone()
        if row is None:
            return None
        with self._lock:
            self._seen[thread_id] = None
            while len(self._seen) > SEEN_KEPT:
                self._seen.popitem(last=False)
        return _reservation(row)

    def drop(self, thread_id: str) -> None:
        """Forget the reservation of a thread whose run began.

        Only a reservation this process has seen (`get`) is deleted: a run looks for its
        thread's reservation while it is prepared, so a thread that was not reserved
        then costs no query here, where the caller may be the event loop (nearly every
        run: `api.http.routes.runs`)."""
        with self._lock:
            if self._seen.pop(thread_id, False) is False:
                return
        with self.db.transaction() as cursor:
            cursor.execute(f"DELETE FROM {self._table} WHERE thread_id = %s", (thread_id,))

    def all(self) -> list[Reservation]:
        """Every reservation, oldest first."""
        with self.db.transaction(write=False) as cursor:
            cursor.execute(f"SELECT {_COLUMNS} FROM {self._table} ORDER BY created_at, thread_id")
            rows = cursor.fetchall()
        return [_reservation(row) for row in rows]


def _reservation(row: Any) -> Reservation:
    return Reservation(
        thread_id=str(row[0]),
        created_at=_moment(float(row[1])),
        metadata=json.loads(row[2]),
        created_by=str(row[3]),
    )


def _moment(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)
