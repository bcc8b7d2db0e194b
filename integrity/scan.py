"""Reading the events table fast: one query per large batch, rows as plain tuples.

The library reads the log as `Notification` objects through its connection
pool, decoding nothing we need; here each batch is one keyset query on a
connection of our own, read-only where the database allows it, and a row is
`(position, aggregate id as 32 hex digits, version, topic, stored state)`.
A `Source` names the table and how to connect, and is small and picklable,
so that worker processes open their own connections. The memory store has
no table: it is read through the library (`LibraryScanner`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from uuid import UUID

from domain.integrity.whole_log import Row
from domain.record.store import backend_of, postgres_params

if TYPE_CHECKING:
    from domain.record.application import Workflows

BATCH = 20_000
FIRST_BATCH = 2_000  # PostgreSQL: the first batch of a range, waited for with nothing to check


@dataclass(frozen=True)
class Source:
    """Where a store's events table is: `sqlite` (a file) or `postgres` (a schema)."""

    dialect: str
    table: str
    path: str = ""
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def dense(self) -> bool:
        """Whether positions are handed out without gaps (a gap then means a deletion)."""
        return self.dialect != "postgres"


class Scanner(Protocol):
    dense: bool

    def head(self) -> int: ...
    def batches(self, after: int, upto: int, size: int = BATCH) -> Iterator[list[Row]]: ...
    def first_events(self, aggregate_ids: Sequence[str]) -> dict[str, bytes]: ...
    def aggregate_rows(self, aggregate_id: str, upto: int) -> list[Row]: ...
    def close(self) -> None: ...


def source_for(store: Workflows) -> Source | None:
    """The store's events table, or None for the memory store (read through the library)."""
    backend = backend_of(store)
    table = str(getattr(store.recorder, "events_table_name", ""))
    if backend == "sqlite" and table:
        return Source("sqlite", table, path=str(store.env.get("SQLITE_DBNAME")))
    if backend == "postgres" and table:
        schema = store.env.get("POSTGRES_SCHEMA") or "public"
        quoted = '"' + schema.replace('"', '""') + '".' + table
        return Source("postgres", quoted, params=postgres_params(store))
    return None


def open_scanner(source: Source) -> SQLiteScanner | PostgresScanner:
    if source.dialect == "sqlite":
        return SQLiteScanner(source)
    return PostgresScanner(source)


def scanner_for(store: Workflows) -> Scanner:
    source = source_for(store)
    if source is None:
        return LibraryScanner(store)
    return open_scanner(source)


class SQLiteScanner:
    """Reads a SQLite events table, read-only, positions being its rowids."""

    dense = True

    def __init__(self, source: Source) -> None:
        self.table = source.table
        uri = Path(source.path).resolve().as_uri() + "?mode=ro"
        self.connection = sqlite3.connect(uri, uri=True, check_same_thread=False)
        self.connection.execute("PRAGMA busy_timeout = 5000")

    def head(self) -> int:
        row = self.connection.execute(f"SELECT max(rowid) FROM {self.table}").fetchone()
        return int(row[0] or 0)

    def batches(self, after: int, upto: int, size: int = BATCH) -> Iterator[list[Row]]:
        query = (
            f"SELECT rowid, originator_id, originator_version, topic, state FROM {self.table} "
            "WHERE rowid > ? AND rowid <= ? ORDER BY rowid LIMIT ?"
        )
        while after < upto:
            rows = self.connection.execute(query, (after, upto, size)).fetchall()
            if not rows:
                return
            yield rows
            after = rows[-1][0]

    def first_events(self, aggregate_ids: Sequence[str]) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        for start in range(0, len(aggregate_ids), 500):
            chunk = list(aggregate_ids[start : start + 500])
            marks = ", ".join("?" * len(chunk))
            query = (
                f"SELECT originator_id, state FROM {self.table} "
                f"WHERE originator_version = 1 AND originator_id IN ({marks})"
            )
            found.update(self.connection.execute(query, chunk).fetchall())
        return found

    def aggregate_rows(self, aggregate_id: str, upto: int) -> list[Row]:
        query = (
            f"SELECT rowid, originator_id, originator_version, topic, state FROM {self.table} "
            "WHERE originator_id = ? AND rowid <= ? ORDER BY rowid"
        )
        return self.connection.execute(query, (aggregate_id, upto)).fetchall()

    def close(self) -> None:
        self.connection.close()


class PostgresScanner:
    """Reads a PostgreSQL events table in read-only transactions, ids as hex text."""

    dense = False
    _COLUMNS = (
        "notification_id, encode(uuid_send(originator_id), 'hex'), originator_version, topic, state"
    )

    def __init__(self, source: Source) -> None:
        # imported here: a worker reading a SQLite file starts without psycopg
        import psycopg  # noqa: PLC0415
        from psycopg.rows import tuple_row  # noqa: PLC0415

        self.table = source.table
        self.connection = psycopg.connect(**source.params, autocommit=True, row_factory=tuple_row)
        self.connection.execute("SET default_transaction_read_only = on")

    def head(self) -> int:
        row = self.connection.execute(f"SELECT max(notification_id) FROM {self.table}").fetchone()
        return int(row[0] or 0) if row else 0

    def batches(self, after: int, upto: int, size: int = BATCH) -> Iterator[list[Row]]:
        """Each batch is asked for while the one before is being checked (by a thread that
        waits for the server without holding the GIL): the server reads as we hash. The
        first batch of a range, which nothing overlaps, is small (`FIRST_BATCH`), so that
        checking starts at once."""
        query = (
            f"SELECT {self._COLUMNS} FROM {self.table} "
            "WHERE notification_id > %s AND notification_id <= %s "
            "ORDER BY notification_id LIMIT %s"
        )

        def fetch(start: int, limit: int) -> list[Row]:
            with self.connection.cursor(binary=True) as cursor:
                return cursor.execute(query, (start, upto, limit), prepare=True).fetchall()

        if after >= upto:
            return
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="verify-read") as reader:
            pending: Future[list[Row]] | None = reader.submit(fetch, after, min(FIRST_BATCH, size))
            while pending is not None:
                rows = pending.result()
                if not rows:
                    return
                last = rows[-1][0]
                pending = reader.submit(fetch, last, size) if last < upto else None
                yield rows

    def first_events(self, aggregate_ids: Sequence[str]) -> dict[str, bytes]:
        if not aggregate_ids:
            return {}
        query = (
            f"SELECT encode(uuid_send(originator_id), 'hex'), state FROM {self.table} "
            "WHERE originator_version = 1 AND originator_id = ANY(%s::uuid[])"
        )
        with self.connection.cursor(binary=True) as cursor:
            rows = cursor.execute(query, (list(aggregate_ids),)).fetchall()
        return dict(rows)

    def aggregate_rows(self, aggregate_id: str, upto: int) -> list[Row]:
        query = (
            f"SELECT {self._COLUMNS} FROM {self.table} "
            "WHERE originator_id = %s::uuid AND notification_id <= %s ORDER BY notification_id"
        )
        with self.connection.cursor(binary=True) as cursor:
            return cursor.execute(query, (aggregate_id, upto)).fetchall()

    def close(self) -> None:
        self.connection.close()


class LibraryScanner:
    """Reads the memory store's log through the library (it has no SQL)."""

    dense = True

    def __init__(self, store: Workflows) -> None:
        self.recorder = store.recorder

    def head(self) -> int:
        return int(self.recorder.max_notification_id() or 0)

    def batches(self, after: int, upto: int, size: int = BATCH) -> Iterator[list[Row]]:
        while after < upto:
            notifications = self.recorder.select_notifications(
                start=after, limit=size, stop=upto, inclusive_of_start=False
            )
            if not notifications:
                return
            yield [
                (n.id, n.originator_id.hex, n.originator_version, n.topic, n.state)  # type: ignore[union-attr]
                for n in notifications
            ]
            after = notifications[-1].id

    def first_events(self, aggregate_ids: Sequence[str]) -> dict[str, bytes]:
        found = {}
        for aggregate_id in aggregate_ids:
            stored = self.recorder.select_events(UUID(aggregate_id), lte=1)
            if stored and stored[0].originator_version == 1:
                found[aggregate_id] = stored[0].state
        return found

    def aggregate_rows(self, aggregate_id: str, upto: int) -> list[Row]:
        return [row for rows in self.batches(0, upto) for row in rows if row[1] == aggregate_id]

    def close(self) -> None:
        """Nothing to release."""
