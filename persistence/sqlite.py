"""The embedded SQLite store: the library's recorder, append-only, WAL.

Two things differ from `eventsourcing.sqlite`:
- The events table refuses UPDATE and DELETE (triggers), so no code path,
  ours or a mistaken script's, rewrites or removes an event.
- `SQLITE_SYNCHRONOUS` (default NORMAL) sets how commits reach the disk. In
  WAL mode NORMAL loses nothing committed when the process crashes or is
  killed, and never corrupts the file; only an OS crash or a power cut may
  lose the last commits. FULL also survives those, at one fsync per commit.
"""

from __future__ import annotations

from typing import Any

from eventsourcing import sqlite as library
from eventsourcing.utils import Environment

SYNCHRONOUS_MODES = ("OFF", "NORMAL", "FULL", "EXTRA")


class AppendOnlySQLiteApplicationRecorder(library.SQLiteApplicationRecorder):
    """The library's recorder, plus triggers that make the events table append-only."""

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
    """Connections that commit with the configured `synchronous` level."""

    def __init__(self, *, synchronous: str, **kwargs: Any) -> None:
        self.synchronous = synchronous
        super().__init__(**kwargs)

    def _create_connection(self) -> library.SQLiteConnection:
        connection = super()._create_connection()
        if not self.is_sqlite_memory_mode:
            connection.cursor().execute(f"PRAGMA synchronous={self.synchronous}")
        return connection


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
