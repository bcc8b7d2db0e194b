"""The read models' database: the same database as the store's events.

SQLite stores keep their read models in the same file; PostgreSQL stores in
the same schema; a memory store in a private in-memory SQLite database. SQL
is written once, with `%s` placeholders, and adapted for SQLite.
"""

from __future__ import annotations

import operator
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

import psycopg
from psycopg import sql
from psycopg.rows import tuple_row

from domain.record.application import Workflows
from domain.record.store import backend_of, postgres_params
from persistence.sqlite_checkpointer import hold_checkpointer, take_commit_checkpoints_off

IDLE_PING_SECONDS = 5.0
ROWS_PER_STATEMENT = 64  # rows a multi-row INSERT takes (`Database.insert_new`)
FEW_ROWS = 8  # rows up to which PostgreSQL's `insert_many` sends one INSERT, not a COPY
BULK_ROWS = 64  # rows from which PostgreSQL's `insert_new` copies them in (a savepoint)


class Cursor(Protocol):
    """The part of a DB-API cursor the read models use."""

    @property
    def rowcount(self) -> int: ...

    def execute(self, sql: str, params: Sequence[Any] = ...) -> Any: ...
    def executemany(self, sql: str, params: Sequence[Sequence[Any]]) -> Any: ...
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...


def insert_values(
    cursor: Cursor,
    table: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    tail: str = "",
) -> None:
    """One INSERT of `rows` (values in `columns` order) into `table`, `tail` after its VALUES."""
    row = f"({', '.join(['%s'] * len(columns))})"
    cursor.execute(
        f"INSERT INTO {table} ({', '.join(columns)}) VALUES {', '.join([row] * len(rows))}{tail}",
        [value for values in rows for value in values],
    )


class Database:
    """One read-model database; `transaction()` yields a cursor, committed on exit."""

    dialect: str
    duplicate_key: tuple[type[Exception], ...]  # what a write breaking a unique key raises

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[Cursor]:  # noqa: ARG002
        """A transaction; `write=False` for reads, which must not wait for writers."""
        raise NotImplementedError
        yield

    def statement(
        self,
        sql: str,
        params: Sequence[Any] = (),
        *,
        write: bool = True,
        binary: bool = False,  # noqa: ARG002 - SQLite has one format
    ) -> list[Any]:
        """One statement in a transaction of its own, and the rows it returns: on
        PostgreSQL one round trip (an autocommit connection), not BEGIN and COMMIT too;
        `binary`: its values in PostgreSQL's binary format (bytes as sent, not hex text)."""
        with self.transaction(write=write) as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()

    def close(self) -> None:
        """Release the connection."""

    def table(self, name: str) -> str:
        return name

    def clear_table(self, cursor: Cursor, table: str) -> None:
        """Delete every row of `table` (SQLite empties a table without a WHERE at once)."""
        cursor.execute(f"DELETE FROM {table}")

    def insert_many(
        self, cursor: Cursor, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]
    ) -> None:
        """Insert `rows` (values in `columns` order) into `table`, in bulk."""
        cursor.executemany(
            f"INSERT INTO {table} ({', '.join(columns)}) "
            f"VALUES ({', '.join(['%s'] * len(columns))})",
            rows,
        )

    def insert_new(
        self,
        cursor: Cursor,
        table: str,
        columns: Sequence[str],
        rows: Sequence[Sequence[Any]],
        key: Sequence[str],
    ) -> None:
        """Insert `rows`, whose keys are meant to be new: one whose `key` a row of `table`
        has already is left out (and of rows with the same key, all but the first).

        Up to ROWS_PER_STATEMENT rows a statement, each statement's rows padded to a
        power of two with copies of its last row (which the conflict clause leaves
        out): a statement's cost is mostly per statement, and a few shapes of it are
        prepared once, where one per row count would crowd the prepared ones out.
        """
        tail = f" ON CONFLICT ({', '.join(key)}) DO NOTHING"
        for start in range(0, len(rows), ROWS_PER_STATEMENT):
            part = list(rows[start : start + ROWS_PER_STATEMENT])
            part += [part[-1]] * ((1 << (len(part) - 1).bit_length()) - len(part))
            insert_values(cursor, table, columns, part, tail)

    @contextmanager
    def wakeups(self, store: Workflows) -> Iterator[Wakeups]:  # noqa: ARG002
        """What a projector waits on between passes: here, the clock alone."""
        yield Wakeups()


class Wakeups:
    """Waits between a projector's passes: `poll` seconds, or until `stop`."""

    def wait(self, stop: threading.Event, poll: float) -> None:
        stop.wait(poll)


class NotifyWakeups(Wakeups):
    """Waits until the store's insert NOTIFYs a commit (or `poll` seconds pass).

    The store's insert function sends `NOTIFY` on the events table's channel
    (the library's channel name) in the inserting transaction, so the wake-up
    comes when the events are committed and visible.
    """

    def __init__(self, connection: psycopg.Connection[Any]) -> None:
        self._connection = connection

    def wait(self, stop: threading.Event, poll: float) -> None:
        if stop.is_set():
            return
        woken = any(True for _ in self._connection.notifies(timeout=poll, stop_after=1))
        if woken:  # one pass reads every commit announced so far
            for _ in self._connection.notifies(timeout=0):
                pass


class SQLiteDatabase(Database):
    dialect = "sqlite"
    duplicate_key = (sqlite3.IntegrityError,)

    def __init__(self, path: str) -> None:
        self._connection = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._connection.execute("PRAGMA busy_timeout = 5000")
        # Read models are rebuilt from the log, and a batch's rows commit with
        # its position: a crash may lose the last batches, never split one.
        self._connection.execute("PRAGMA synchronous = NORMAL")
        # Rows deleted or rewritten (a rebuild after an erasure) are zeroed in the file.
        self._connection.execute("PRAGMA secure_delete = ON")
        self._lock = threading.Lock()
        self._release_checkpointer: Callable[[], None] | None = None
        if path != ":memory:":  # the file's checkpointer, not this connection's commits
            take_commit_checkpoints_off(self._connection)
            self._release_checkpointer = hold_checkpointer(path)

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[Cursor]:
        with self._lock:
            cursor = self._connection.cursor()
            cursor.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield _SQLiteCursor(cursor)
            except BaseException:
                self._connection.rollback()
                raise
            self._connection.commit()

    def close(self) -> None:
        self._connection.close()
        if self._release_checkpointer is not None:
            self._release_checkpointer()

    def insert_new(
        self,
        cursor: Cursor,
        table: str,
        columns: Sequence[str],
        rows: Sequence[Sequence[Any]],
        key: Sequence[str],
    ) -> None:
        """As the base does, with the rows in key order (a stable sort: the first of rows
        with the same key stays first), which SQLite's B-trees take near one another: a
        rebuild's words of the queue (`projections.pending_search`) cost less CPU
        (BENCHMARKS.md, "Design choices, measured")."""
        # rows that are all key sort as tuples: 0.7 x the time of an itemgetter's key
        by_key: Callable[[Sequence[Any]], Any] = (
            tuple if list(key) == list(columns) else operator.itemgetter(*map(columns.index, key))
        )
        super().insert_new(cursor, table, columns, sorted(rows, key=by_key), key)


class _SQLiteCursor:
    """Adapts `%s` placeholders to SQLite's `?`."""

    def __init__(self, cursor: sqlite3.Cursor) -> None:
        self._cursor = cursor

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._cursor.execute(sql.replace("%s", "?"), tuple(params))

    def executemany(self, sql: str, params: Sequence[Sequence[Any]]) -> Any:
        return self._cursor.executemany(sql.replace("%s", "?"), params)

    def fetchone(self) -> Any:
        return self._cursor.fetchone()

    def fetchall(self) -> list[Any]:
        return self._cursor.fetchall()


class StagedCursor:
    """A cursor that reads at once and keeps the writes, in order, for `replay`.

    A projector works a batch out in a read transaction through it, which
    takes no lock, then replays the writes in a write transaction: on SQLite
    the file's one write lock is then held for the writes alone. A statement
    that is not a SELECT is a write; asking a write for rows is an error.
    """

    def __init__(self, cursor: Cursor) -> None:
        self._cursor = cursor
        self._writes: list[tuple[str, Any, bool]] = []  # (sql, params, many)
        self._read_last = False

    @property
    def rowcount(self) -> int:
        return self._read_cursor().rowcount

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        self._read_last = sql.lstrip()[:6].upper() == "SELECT"
        if self._read_last:
            return self._cursor.execute(sql, params)
        self._writes.append((sql, params, False))
        return None

    def executemany(self, sql: str, params: Sequence[Sequence[Any]]) -> Any:
        self._read_last = False
        self._writes.append((sql, params, True))

    def fetchone(self) -> Any:
        return self._read_cursor().fetchone()

    def fetchall(self) -> list[Any]:
        return self._read_cursor().fetchall()

    def replay(self, cursor: Cursor) -> None:
        """Run the kept writes on `cursor`, in the order they were asked for."""
        for statement, params, many in self._writes:
            if many:
                cursor.executemany(statement, params)
            else:
                cursor.execute(statement, params)

    def _read_cursor(self) -> Cursor:
        if not self._read_last:
            msg = "a staged write has no rows or row count until it is replayed"
            raise TypeError(msg)
        return self._cursor


class _Connections:
    """A process's idle connections of one kind, the one used last handed out first (it
    is warm): a thread borrows one for a transaction or a statement and gives it back,
    so that a process holds as many as it uses at once, not one per thread it ever ran."""

    def __init__(self, connect: Callable[[], psycopg.Connection[Any]]) -> None:
        self._connect = connect
        self._idle: list[tuple[psycopg.Connection[Any], float]] = []
        self._lock = threading.Lock()

    def borrow(self) -> psycopg.Connection[Any]:
        """An idle connection, pinged first if idle for a while (and replaced if the server
        dropped it: a restart), so that a reader does not fail once on it; else a new one."""
        while True:
            with self._lock:
                if not self._idle:
                    break
                connection, used = self._idle.pop()
            if connection.closed:
                continue
            if time.monotonic() - used < IDLE_PING_SECONDS:
                return connection
            try:
                connection.execute("")
                if not connection.autocommit:
                    connection.rollback()  # the ping began a transaction: end it, or each
                    # transaction() after it would be a savepoint in one never committed
            except psycopg.Error:
                connection.close()
                continue
            return connection
        return self._connect()

    def give_back(self, connection: psycopg.Connection[Any]) -> None:
        if connection.closed:
            return
        with self._lock:
            self._idle.append((connection, time.monotonic()))

    def close(self) -> None:
        """Close the idle connections (one in use is kept by its thread until given back)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for connection, _used in idle:
            connection.close()


class PostgresDatabase(Database):
    dialect = "postgres"
    duplicate_key = (psycopg.errors.UniqueViolation,)

    def __init__(self, params: dict[str, Any], schema: str) -> None:
        self._params = params
        self._schema = schema
        # Read models are rebuilt from the log: their commits need not wait for the WAL to
        # reach the disk (a transaction that must, says so: SET LOCAL synchronous_commit).
        # As on SQLite (synchronous NORMAL): a batch's rows commit with its position, so a
        # crash may lose the last batches, to be applied again, and never split one.
        options = "-c synchronous_commit=off"
        self._transactions = _Connections(
            lambda: psycopg.connect(**params, row_factory=tuple_row, options=options)
        )
        self._statements = _Connections(
            lambda: psycopg.connect(
                **params, autocommit=True, row_factory=tuple_row, options=options
            )
        )
        self._local = threading.local()  # the connection this thread's transaction holds

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[Cursor]:  # noqa: ARG002
        """A transaction on a borrowed connection; one begun inside another on the same
        thread is a savepoint of it (its connection)."""
        held: psycopg.Connection[Any] | None = getattr(self._local, "held", None)
        if held is not None:
            with held.transaction(), held.cursor() as cursor:
                yield cursor
            return
        connection = self._transactions.borrow()
        self._local.held = connection
        try:
            with connection.transaction(), connection.cursor() as cursor:
                yield cursor
        except psycopg.OperationalError:
            connection.close()  # not given back, nor the idle ones (the server may have
            self._transactions.close()  # restarted): the next transaction connects anew
            raise
        finally:
            self._local.held = None
            self._transactions.give_back(connection)

    def statement(
        self,
        sql: str,
        params: Sequence[Any] = (),
        *,
        write: bool = True,  # noqa: ARG002 - a reader waits for no writer here
        binary: bool = False,
    ) -> list[Any]:
        connection = self._statements.borrow()
        try:
            cursor = connection.execute(sql, params, binary=binary)
            return cursor.fetchall() if cursor.description is not None else []
        except psycopg.OperationalError:
            connection.close()  # not given back, nor the idle ones (the server may have
            self._statements.close()  # restarted): the next statement connects anew
            raise
        finally:
            self._statements.give_back(connection)

    def close(self) -> None:
        self._transactions.close()
        self._statements.close()

    def table(self, name: str) -> str:
        return f'"{self._schema}".{name}'

    def clear_table(self, cursor: Cursor, table: str) -> None:
        """TRUNCATE: a DELETE would leave every row dead in the table and its indexes,
        for the rebuild's inserts to wade through until a vacuum. An empty table is
        left alone (a TRUNCATE gives a table and each index new files, at some cost)."""
        cursor.execute(f"SELECT EXISTS (SELECT 1 FROM {table})")
        if cursor.fetchone()[0]:
            cursor.execute(f"TRUNCATE {table}")

    def insert_many(
        self, cursor: Cursor, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]
    ) -> None:
        """COPY: one stream instead of a pipelined statement per row (faster: BENCHMARKS.md,
        "Design choices, measured"); up to FEW_ROWS rows, one INSERT (a COPY is two
        round trips, and costs more to set up than it saves on so few rows)."""
        if len(rows) <= FEW_ROWS:
            if rows:
                insert_values(cursor, table, columns, rows)
            return
        with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:  # type: ignore[attr-defined]
            for row in rows:
                copy.write_row(row)

    def insert_new(
        self,
        cursor: Cursor,
        table: str,
        columns: Sequence[str],
        rows: Sequence[Sequence[Any]],
        key: Sequence[str],
    ) -> None:
        """Many rows by COPY, in a savepoint: should a key be there after all, the
        savepoint is rolled back and the rows go in by the base's multi-row INSERTs, that
        row left out. (A row of an INSERT costs the server 2-3 x a COPY's row.)"""
        if len(rows) >= BULK_ROWS:
            try:
                with cursor.connection.transaction():  # type: ignore[attr-defined]
                    self.insert_many(cursor, table, columns, rows)
            except psycopg.errors.UniqueViolation:
                pass
            else:
                return
        super().insert_new(cursor, table, columns, rows, key)

    @contextmanager
    def wakeups(self, store: Workflows) -> Iterator[Wakeups]:
        """Wake-ups by LISTEN on the store's channel, on a connection of their own."""
        channel = store.recorder.channel_name  # type: ignore[attr-defined]
        with psycopg.connect(**self._params, autocommit=True) as connection:
            connection.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
            yield NotifyWakeups(connection)


def database_for(store: Workflows) -> Database:
    """The database that holds `store`'s events, for its read models."""
    backend = backend_of(store)
    if backend == "sqlite":
        return SQLiteDatabase(str(store.env.get("SQLITE_DBNAME")))
    if backend == "postgres":
        schema = store.env.get("POSTGRES_SCHEMA") or "public"
        return PostgresDatabase(postgres_params(store), schema)
    return SQLiteDatabase(":memory:")
