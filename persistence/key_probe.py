"""The per-request key check, without the store's pool (see domain/access/keyring.py).

The library's recorder asks through its pool, its retrying decorator and a
transaction of its own: on PostgreSQL that machinery costs as much CPU again as
the query (measured: 162 us a check through the recorder, 85 us on a connection of
its own). A probe holds one connection and one statement, under a lock, so that
any thread may call it.
"""

from __future__ import annotations

import sqlite3
import threading
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql


class SQLiteKeyProbe:
    """The check as one primary-key lookup on a private SQLite connection.

    In WAL mode a read takes no lock and waits for no writer, and each SELECT
    (autocommit) sees every commit made before it, by any process.
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


class PostgresKeyProbe:
    """The check as one prepared primary-key lookup on a private PostgreSQL connection.

    Autocommit: each SELECT sees every commit made before it, by any process.
    The connection is made on first use; one the server dropped (a restart, a
    network cut) is closed, and the check asked once more on a new one, so that
    the first request after an outage is answered as the store's pool answers it.
    """

    def __init__(self, params: dict[str, Any], schema: str, events_table: str) -> None:
        self._params = params
        self._statement = sql.SQL(
            "SELECT 1 FROM {}.{} WHERE originator_id = %s AND originator_version > %s LIMIT 1"
        ).format(sql.Identifier(schema), sql.Identifier(events_table))
        self._connection: psycopg.Connection[Any] | None = None
        self._lock = threading.Lock()

    def changed_since(self, key_id: UUID, version: int) -> bool:
        with self._lock:
            try:
                return self._ask(key_id, version)
            except psycopg.OperationalError:  # a connection the server dropped: once more
                self._drop()
                return self._ask(key_id, version)

    def _ask(self, key_id: UUID, version: int) -> bool:
        if self._connection is None:
            self._connection = psycopg.connect(**self._params, autocommit=True)
        cursor = self._connection.execute(self._statement, (key_id, version), prepare=True)
        return cursor.fetchone() is not None

    def _drop(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def close(self) -> None:
        with self._lock:
            self._drop()
