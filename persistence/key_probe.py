"""The per-request key check on SQLite, without the store's pool (see domain/access/keyring.py)."""

from __future__ import annotations

import sqlite3
import threading
from uuid import UUID


class SQLiteKeyProbe:
    """The check as one primary-key lookup on a private SQLite connection.

    In WAL mode a read takes no lock and waits for no writer, and each SELECT
    (autocommit) sees every commit made before it, by any process. The
    connection is used under a lock, so any thread may call it.
    """

    def __init__(self, path: str, events_table: str) -> None:
        self._connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._statement = (
            f"SELECT 1 FROM {events_table} "  # the recorder's own table name
            "WHERE originator_id = ? AND originator_version > ? LIMIT 1"
        )
        self._lock = threading.Lock()

    def changed_since(self, key_id: UUID, version: int) -> bool:
        with self._lock:
            row = self._connection.execute(self._statement, (key_id.hex, version)).fetchone()
        return row is not None

    def close(self) -> None:
        with self._lock:
            self._connection.close()
