"""The embedded SQLite store: the library's recorder, append-only, WAL.

What differs from `eventsourcing.sqlite`:
- The events table refuses UPDATE and DELETE (triggers), so no code path,
  ours or a mistaken script's, rewrites or removes an event; the one
  exception is a recorded purge (`purge`): an event is deleted only if its
  aggregate and position are listed in `holdpoint_purged`, whose rows a
  purge writes, with its operation's number, in the transaction that deletes.
- `SQLITE_SYNCHRONOUS` (default NORMAL) sets how commits reach the disk. In
  WAL mode NORMAL loses nothing committed when the process crashes or is
  killed, and never corrupts the file; only an OS crash or a power cut may
  lose the last commits. FULL also survives those, at one fsync per commit.
- Writers in one process take turns on one lock per database file
  (`write_gate`), shared by every store opened on the file and by the read
  models' projector; readers wait for no writer (see the pool). SQLite lets
  one writer in at a time anyway; a writer that finds the file locked waits
  in SQLite's busy handler, which sleeps 1, 2, 5, 10, 15, 20, 25... ms between
  attempts whenever the lock is freed meanwhile. A writer waiting for the
  gate is woken the moment it is free. Writers in other processes (the CLI)
  still meet at SQLite's lock, as before.
- A commit inserts its events with one INSERT statement, not one per event,
  run by itself in autocommit mode (one statement is one transaction: no
  BEGIN and COMMIT around it) when the events fit one statement; the reads
  of a thread (its events, the thread at a version) are one SELECT each,
  outside BEGIN ... ROLLBACK (in WAL mode a statement reads one consistent
  snapshot by itself). Each SQLite call lets the GIL go, and a thread coming
  back from one may wait for another thread to hand the GIL back (up to the
  interpreter's switch interval), while it holds the file's write gate if it
  is committing: fewer calls, fewer such waits.
- Commits do not checkpoint the WAL (copy it back into the database file)
  while they hold the gate: a thread per open file does it, off the commit
  path (`persistence.sqlite_checkpointer`).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import Any
from uuid import UUID

from eventsourcing import persistence as errors
from eventsourcing import sqlite as library
from eventsourcing.persistence import (
    ConnectionUnavailableError,
    Notification,
    OperationalError,
    PersistenceError,
    StoredEvent,
)
from eventsourcing.utils import Environment

from persistence import kind_index
from persistence.sqlite_checkpointer import BACKSTOP_PAGES, hold_checkpointer
from persistence.version_reads import select_at_sql, split_rows

SYNCHRONOUS_MODES = ("OFF", "NORMAL", "FULL", "EXTRA")
PURGED = "holdpoint_purged"  # what recorded purges may delete (see the module's docstring)
INSERT_ROWS = 1_000  # events per INSERT statement: 4 parameters each, SQLite allows 32,766
_LIBRARY_ERRORS: dict[type[sqlite3.Error], type[PersistenceError]] = {
    sqlite3.InterfaceError: errors.InterfaceError,
    sqlite3.DataError: errors.DataError,
    sqlite3.OperationalError: errors.OperationalError,
    sqlite3.IntegrityError: errors.IntegrityError,
    sqlite3.InternalError: errors.InternalError,
    sqlite3.ProgrammingError: errors.ProgrammingError,
    sqlite3.NotSupportedError: errors.NotSupportedError,
    sqlite3.DatabaseError: errors.DatabaseError,
}


_GATES: dict[str, threading.Lock] = {}
_GATES_GUARD = threading.Lock()


def write_gate(db_name: str) -> threading.Lock:
    """The lock that this process's writers of the SQLite file `db_name` take in turn."""
    key = os.path.realpath(db_name)
    with _GATES_GUARD:
        return _GATES.setdefault(key, threading.Lock())


class AppendOnlySQLiteApplicationRecorder(library.SQLiteApplicationRecorder):
    """The library's recorder, plus triggers that make the events table append-only, and
    fewer SQLite calls per commit and per read (see the module's docstring)."""

    _kind_index: bool | None = None  # whether the file has the index of rare kinds

    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        """Commit the events; as one autocommit INSERT when they fit one statement.

        One statement is one transaction by itself (the connections are in autocommit
        mode), so BEGIN and COMMIT around it would only add two calls into SQLite, each
        of which gives up the GIL and must win it back from the threads at work.
        """
        if len(stored_events) > INSERT_ROWS:
            return super().insert_events(stored_events, **kwargs)
        # The library's `get_connection` and error mapping, spelled out: two context
        # managers fewer on every commit's path.
        pool = self.datastore.pool
        connection = pool.get_connection(is_writer=True)
        try:
            cursor = connection.cursor()
            with cursor:
                return self._insert_events(cursor, stored_events, **kwargs)
        except sqlite3.Error as error:
            raise _library_error(error) from error
        finally:
            pool.put_connection(connection)

    def _insert_events(
        self, c: library.SQLiteCursor, stored_events: Sequence[StoredEvent], **_: Any
    ) -> Sequence[int] | None:
        """Insert the events with one statement per `INSERT_ROWS`; their notification ids.

        A row's id is its rowid. The rows of one INSERT get consecutive rowids, each
        one more than the table's largest so far (SQLite's rule for a table without
        AUTOINCREMENT, whose largest rowid is far below 2**63), and this transaction
        is the file's only writer: so the ids end at the last row's rowid.
        """
        ids: list[int] = []
        for start in range(0, len(stored_events), INSERT_ROWS):
            chunk = stored_events[start : start + INSERT_ROWS]
            params: list[Any] = []
            for event in chunk:
                originator = event.originator_id
                params += (
                    originator.hex if isinstance(originator, UUID) else originator,
                    event.originator_version,
                    event.topic,
                    event.state,
                )
            c.execute(_insert_rows_sql(self.events_table_name, len(chunk)), params)
            last = c.lastrowid
            ids.extend(range(last - len(chunk) + 1, last + 1))
        return ids

    def select_events(
        self,
        originator_id: UUID | str,
        *,
        gt: int | None = None,
        lte: int | None = None,
        desc: bool = False,
        limit: int | None = None,
    ) -> Sequence[StoredEvent]:
        """The library's query, run as one statement without BEGIN and ROLLBACK around it.

        Its rows are plain tuples of the columns an event needs, and the originator's
        id is converted once, not per row (every row is the one originator's; see
        BENCHMARKS.md, "Design choices, measured").
        """
        key = originator_id.hex if isinstance(originator_id, UUID) else originator_id
        statement = (
            f"SELECT originator_version, topic, state FROM {self.events_table_name} "
            "WHERE originator_id=? "
        )
        params: list[Any] = [key]
        if gt is not None:
            statement += "AND originator_version>? "
            params.append(gt)
        if lte is not None:
            statement += "AND originator_version<=? "
            params.append(lte)
        statement += (
            "ORDER BY originator_version DESC " if desc else "ORDER BY originator_version ASC "
        )
        if limit is not None:
            statement += "LIMIT ? "
            params.append(limit)
        rows = self._select(statement, params, tuples=True)
        if not rows:
            return []
        converted = self.convert_originator_id(key)  # the stored text: it matched `key`
        return [StoredEvent(converted, version, topic, state) for version, topic, state in rows]

    def select_notifications(
        self,
        start: int | None,
        limit: int,
        stop: int | None = None,
        topics: Sequence[str] = (),
        *,
        inclusive_of_start: bool = True,
    ) -> Sequence[Notification]:
        """The library's read of the log; of rare kinds through their index
        (`persistence.kind_index`), where the file has it."""
        if not kind_index.rare(topics) or not self._has_kind_index():
            return super().select_notifications(
                start, limit, stop, topics, inclusive_of_start=inclusive_of_start
            )
        table = self.events_table_name
        terms = [kind_index.condition(), f"topic IN ({','.join('?' * len(topics))})"]
        params: list[Any] = list(topics)
        if start is not None:
            terms.append("rowid>=?" if inclusive_of_start else "rowid>?")
            params.append(start)
        if stop is not None:
            terms.append("rowid<=?")
            params.append(stop)
        statement = (
            f"SELECT rowid, originator_id, originator_version, topic, state FROM {table} "
            f"INDEXED BY {kind_index.index_name(table)} WHERE {' AND '.join(terms)} "
            "ORDER BY rowid LIMIT ?"
        )
        rows = self._select(statement, [*params, limit], tuples=True)
        return [
            Notification(
                id=notification_id,
                originator_id=self.convert_originator_id(originator_id),
                originator_version=version,
                topic=topic,
                state=state,
            )
            for notification_id, originator_id, version, topic, state in rows
        ]

    def _has_kind_index(self) -> bool:
        """Whether the file has the index of rare kinds (made when the store opens)."""
        if self._kind_index is None:
            found = self._select(
                "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?",
                [kind_index.index_name(self.events_table_name)],
            )
            self._kind_index = bool(found)
        return self._kind_index

    def select_at_version(
        self, snapshots: Any, originator_id: Any, version: int, upto: int, *, head: bool
    ) -> tuple[Any, list[Any], int | None]:
        """A thread as of `version` in one query (`persistence.version_reads`)."""
        table = None if snapshots is None else snapshots.events_table_name
        marks = {"id": ":id", "version": ":version", "upto": ":upto"}
        query = select_at_sql(self.events_table_name, table, marks, head=head)
        params = {"id": originator_id.hex, "version": version, "upto": upto}
        return split_rows(originator_id, self._select(query, params))

    def _select(self, statement: str, params: Any, *, tuples: bool = False) -> list[Any]:
        """The rows of one statement (`sqlite3.Row`s, or plain tuples), run without BEGIN
        and ROLLBACK around it: in WAL mode one statement reads one consistent snapshot
        by itself."""
        with self.datastore.get_connection(commit=False) as connection, _library_errors():
            cursor = connection.cursor()
            if tuples:
                cursor.row_factory = None  # type: ignore[attr-defined]  # a sqlite3.Cursor
            cursor.execute(statement, params)
            return cursor.fetchall()  # type: ignore[no-any-return]

    def construct_create_table_statements(self) -> list[str]:
        table = self.events_table_name
        refuse = "SELECT RAISE(ABORT, 'holdpoint events are append-only: {} refused');"
        permitted = (
            f"SELECT 1 FROM {PURGED} p WHERE p.originator_id = OLD.originator_id "
            "AND OLD.rowid <= p.upto"
        )
        return [
            *super().construct_create_table_statements(),
            kind_index.sqlite_index(table),
            f"CREATE TABLE IF NOT EXISTS {PURGED} (originator_id TEXT NOT NULL, "
            "upto INTEGER NOT NULL, operation INTEGER NOT NULL)",
            f"CREATE TRIGGER IF NOT EXISTS {PURGED}_no_update BEFORE UPDATE ON {PURGED} "
            f"BEGIN {refuse.format('UPDATE')} END",
            f"CREATE TRIGGER IF NOT EXISTS {PURGED}_no_delete BEFORE DELETE ON {PURGED} "
            f"BEGIN {refuse.format('DELETE')} END",
            f"CREATE TRIGGER IF NOT EXISTS {table}_no_update BEFORE UPDATE ON {table} "
            f"BEGIN {refuse.format('UPDATE')} END",
            f"DROP TRIGGER IF EXISTS {table}_no_delete",  # before purges: refused every DELETE
            f"CREATE TRIGGER IF NOT EXISTS {table}_no_delete_unless_purged BEFORE DELETE "
            f"ON {table} WHEN NOT EXISTS ({permitted}) BEGIN {refuse.format('DELETE')} END",
        ]

    def may_purge(self) -> str | None:
        """None: whoever may write the file may purge (SQLite has no roles)."""
        return None

    def purge(
        self,
        record: tuple[UUID, int],
        operation: int,
        targets: Sequence[tuple[UUID, int]],
        snapshots: str | None,
    ) -> int:
        """Delete the events of each (aggregate, up to position) named by the recorded purge
        `record` (its aggregate and version), and their snapshots, in one transaction:
        the events deleted."""
        rows = [(aggregate.hex, upto, operation) for aggregate, upto in targets]
        table = self.events_table_name
        with self.datastore.transaction(commit=True) as cursor:
            cursor.execute(
                f"SELECT state FROM {table} WHERE originator_id = ? AND originator_version = ?",
                (record[0].hex, record[1]),
            )
            found = cursor.fetchone()
            listed = bytes(found[0]).decode() if found is not None else ""
            if not listed or any(aggregate_hex not in listed for aggregate_hex, _, _ in rows):
                msg = "holdpoint purges only what a recorded purge names"
                raise errors.IntegrityError(msg)
            deleted = 0
            for aggregate_hex, upto, _ in rows:
                cursor.execute(
                    f"INSERT INTO {PURGED} VALUES (?, ?, ?)", (aggregate_hex, upto, operation)
                )
                cursor.execute(
                    f"DELETE FROM {table} WHERE originator_id = ? AND rowid <= ?",
                    (aggregate_hex, upto),
                )
                cursor.execute("SELECT changes()")
                deleted += cursor.fetchone()[0]
                if snapshots is not None:
                    cursor.execute(
                        f"DELETE FROM {snapshots} WHERE originator_id = ?", (aggregate_hex,)
                    )
        return deleted


@lru_cache(maxsize=64)
def _insert_rows_sql(table: str, rows: int) -> str:
    return f"INSERT INTO {table} VALUES " + ",".join(["(?,?,?,?)"] * rows)


@contextmanager
def _library_errors() -> Iterator[None]:
    """sqlite3's errors raised as the library's, as its transactions raise them."""
    try:
        yield
    except sqlite3.Error as error:
        raise _library_error(error) from error


def _library_error(error: sqlite3.Error) -> PersistenceError:
    """sqlite3's `error` as the library's error of its kind."""
    return _LIBRARY_ERRORS.get(type(error), PersistenceError)(error)


class TunedSQLiteConnectionPool(library.SQLiteConnectionPool):
    """Connections that commit with the configured `synchronous` level, and readers that
    never queue behind a writer.

    The library's pool hands out connections one caller at a time (a "fairness"
    semaphore), and a writer waits for the pool's one writer lock while it holds that
    semaphore: every reader then waits for the current write *and* the next one. In WAL
    mode readers need no lock at all, so here a writer waits for the writer lock first,
    without the semaphore; it still writes alone, and readers are served meanwhile. The
    writer lock is the file's `write_gate`, shared with every other pool on the file.

    A writer's connection is kept for the next writer rather than put back in the pool
    (it stays checked out, so the pool's `close` closes it): a commit then takes the
    writer lock and nothing else, not the pool's condition and the connection's own lock
    besides, twice.

    The file's WAL checkpointer runs from the pool's first connection until it is closed.
    """

    def __init__(self, *, synchronous: str, **kwargs: Any) -> None:
        self.synchronous = synchronous
        self._release_checkpointer: Callable[[], None] | None = None
        self._checkpointer_guard = threading.Lock()
        self._kept_writer: library.SQLiteConnection | None = None  # under the writer lock
        super().__init__(**kwargs)
        if not self.is_sqlite_memory_mode:
            self._writer_lock = write_gate(self.db_name)  # the library's lock, shared

    def get_connection(
        self, timeout: float | None = None, *, is_writer: bool | None = None
    ) -> library.SQLiteConnection:
        if is_writer is not True or self.is_sqlite_memory_mode:  # memory: the library's interlock
            return super().get_connection(timeout, is_writer=is_writer)
        timeout = self.pool_timeout if timeout is None else timeout
        started = time.monotonic()
        if not self._writer_lock.acquire(timeout=timeout):
            msg = "Timed out waiting for return of writer"
            raise ConnectionUnavailableError(msg)
        kept, self._kept_writer = self._kept_writer, None
        if kept is not None and not kept.closed:
            kept.is_writer = True
            self._num_writers += 1
            return kept
        try:
            remaining = max(timeout - (time.monotonic() - started), 0.0)
            connection = super().get_connection(remaining, is_writer=None)
        except BaseException:
            self._writer_lock.release()
            raise
        connection.is_writer = True  # put_connection releases the writer lock
        self._num_writers += 1
        return connection

    def put_connection(self, conn: library.SQLiteConnection) -> None:
        if conn.is_writer is not True or self.is_sqlite_memory_mode or self.closed or conn.closed:
            super().put_connection(conn)
            return
        conn.is_writer = None
        self._num_writers -= 1
        self._kept_writer = conn
        self._writer_lock.release()

    def _create_connection(self) -> library.SQLiteConnection:
        try:
            connection = super()._create_connection()
        except sqlite3.Error as error:
            # Raised before the library's error mapping: a folder or file that cannot be
            # written (read-only mount, permissions) lands here, as a store that cannot answer.
            msg = (
                f"cannot open the SQLite file {self.db_name}: {error} (its folder must be "
                "writable: SQLite keeps its -wal and -shm files beside it)"
            )
            raise OperationalError(msg) from error
        if not self.is_sqlite_memory_mode:
            connection.cursor().execute(f"PRAGMA synchronous={self.synchronous}")
            # A deleted row (a snapshot, a purged event) is zeroed in the file, not left in a
            # free page: an erasure leaves no old copy (service/erasure.py).
            connection.cursor().execute("PRAGMA secure_delete=ON")
            connection.cursor().execute(f"PRAGMA wal_autocheckpoint={BACKSTOP_PAGES}")
            with self._checkpointer_guard:  # once the file is open and in WAL mode
                if self._release_checkpointer is None and not self.closed:
                    self._release_checkpointer = hold_checkpointer(self.db_name)
        return connection

    def close(self) -> None:
        super().close()
        with self._checkpointer_guard:
            release, self._release_checkpointer = self._release_checkpointer, None
        if release is not None:
            release()


class Factory(library.SQLiteFactory):  # the module's only factory, as the library requires
    """`PERSISTENCE_MODULE=persistence.sqlite`."""

    SQLITE_SYNCHRONOUS = "SQLITE_SYNCHRONOUS"
    application_recorder_class = AppendOnlySQLiteApplicationRecorder

    def __init__(self, env: Environment | dict[str, str] | None) -> None:
        super().__init__(env)
        synchronous = (self.env.get(self.SQLITE_SYNCHRONOUS) or "NORMAL").upper()
        if synchronous not in SYNCHRONOUS_MODES:
            msg = f"SQLITE_SYNCHRONOUS must be one of {', '.join(SYNCHRONOUS_MODES)}"
            raise OSError(msg)
        library_pool = self.datastore.pool
        self.datastore.pool = TunedSQLiteConnectionPool(
            synchronous=synchronous,
            db_name=library_pool.db_name,
            lock_timeout=library_pool.lock_timeout,
        )
        library_pool.close()
