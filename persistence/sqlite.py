"""The embedded SQLite store: the library's recorder, append-only, WAL.

What differs from `eventsourcing.sqlite`:
- The events table refuses UPDATE and DELETE (triggers), so no code path,
  ours or a mistaken script's, rewrites or removes an event.
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
- Commits do not checkpoint the WAL (copy it back into the database file)
  while they hold the gate: a thread per open file does it, off the commit
  path (`persistence.sqlite_checkpointer`).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import Any

from eventsourcing import sqlite as library
from eventsourcing.persistence import ConnectionUnavailableError, OperationalError
from eventsourcing.utils import Environment

from persistence.sqlite_checkpointer import BACKSTOP_PAGES, hold_checkpointer
from persistence.version_reads import select_at_sql, split_rows

SYNCHRONOUS_MODES = ("OFF", "NORMAL", "FULL", "EXTRA")


_GATES: dict[str, threading.Lock] = {}
_GATES_GUARD = threading.Lock()


def write_gate(db_name: str) -> threading.Lock:
    """The lock that this process's writers of the SQLite file `db_name` take in turn."""
    key = os.path.realpath(db_name)
    with _GATES_GUARD:
        return _GATES.setdefault(key, threading.Lock())


class AppendOnlySQLiteApplicationRecorder(library.SQLiteApplicationRecorder):
    """The library's recorder, plus triggers that make the events table append-only."""

    def select_at_version(
        self, snapshots: Any, originator_id: Any, version: int, upto: int
    ) -> tuple[Any, list[Any], int]:
        """A thread as of `version` in one query (`persistence.version_reads`)."""
        table = None if snapshots is None else snapshots.events_table_name
        marks = {"id": ":id", "version": ":version", "upto": ":upto"}
        query = select_at_sql(self.events_table_name, table, marks)
        params = {"id": originator_id.hex, "version": version, "upto": upto}
        with self.datastore.transaction(commit=False) as cursor:
            cursor.execute(query, params)
            return split_rows(originator_id, cursor.fetchall())

    def construct_create_table_statements(self) -> list[str]:
        table = self.events_table_name
        refuse = "SELECT RAISE(ABORT, 'holdpoint events are append-only: {} refused');"
        return [
            *super().construct_create_table_statements(),
            f"CREATE TRIGGER IF NOT EXISTS {table}_no_update BEFORE UPDATE ON {table} "
            f"BEGIN {refuse.format('UPDATE')} END",
            f"CREATE TRIGGER IF NOT EXISTS {table}_no_delete BEFORE DELETE ON {table} "
            f"BEGIN {refuse.format('DELETE')} END",
        ]


class TunedSQLiteConnectionPool(library.SQLiteConnectionPool):
    """Connections that commit with the configured `synchronous` level, and readers that
    never queue behind a writer.

    The library's pool hands out connections one caller at a time (a "fairness"
    semaphore), and a writer waits for the pool's one writer lock while it holds that
    semaphore: every reader then waits for the current write *and* the next one. In WAL
    mode readers need no lock at all, so here a writer waits for the writer lock first,
    without the semaphore; it still writes alone, and readers are served meanwhile. The
    writer lock is the file's `write_gate`, shared with every other pool on the file.

    The file's WAL checkpointer runs from the pool's first connection until it is closed.
    """

    def __init__(self, *, synchronous: str, **kwargs: Any) -> None:
        self.synchronous = synchronous
        self._release_checkpointer: Callable[[], None] | None = None
        self._checkpointer_guard = threading.Lock()
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
        try:
            remaining = max(timeout - (time.monotonic() - started), 0.0)
            connection = super().get_connection(remaining, is_writer=None)
        except BaseException:
            self._writer_lock.release()
            raise
        connection.is_writer = True  # put_connection releases the writer lock
        self._num_writers += 1
        return connection

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
