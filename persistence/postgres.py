"""The production PostgreSQL store: the library's recorder, faster and append-only.

What differs from `eventsourcing.postgres`:

- One round trip per commit, the events gathered into four arrays. The library's
  default insert is a pipelined transaction (`LOCK TABLE ... IN EXCLUSIVE
  MODE`, `NOTIFY`, `INSERT`, `COMMIT`); its faster database-function path skips the table lock, so a
  follower reading the notification log could pass over an id that commits
  later. Ours is one function, `holdpoint_insert_events`, that takes the same
  EXCLUSIVE lock, notifies and inserts, called as one autocommit statement:
  notification ids still become visible in commit order, so no projection
  can miss an event.
- The function is `SECURITY DEFINER`, owned by the role that created the
  tables, so the server's role needs no INSERT (nor the UPDATE that LOCK
  TABLE otherwise demands) on the events table: see the README's
  least-privilege role. EXECUTE on it is revoked from PUBLIC: only roles
  granted it may append.
- Table creation by several processes at once is serialised by an advisory
  lock.
- The events table refuses UPDATE, DELETE and TRUNCATE (triggers), even for
  its owner, but for a recorded purge: `holdpoint_purge_events`, another
  `SECURITY DEFINER` function whose EXECUTE no role is granted (the owner
  calls it, from `holdpoint retention apply`), deletes only the aggregates a
  recorded `ThreadsPurged` names, after listing them in `holdpoint_purged`,
  the one place the trigger lets a DELETE through.
- A schema named by `POSTGRES_SCHEMA` is created if it does not exist.
- A statement is tried twice, not ten times, so that a database outage is
  answered in seconds (see ATTEMPTS).
- The pool tries to reconnect at most a second apart (see QuickReconnectPool),
  so the server works again within a second of the database coming back; it
  pings a connection it hands out only when the server has written to it,
  and it hands out the connection used last (warm), not the one idle longest.
- A thread as of a version is read in one statement (`select_at_version`).
- An aggregate's events are read by a statement rendered once per shape, as
  tuples (the library composes and renders its statement on every read, and
  makes a dict of each row).
- A commit may carry a guard (`persistence.commit_guard`): a run's lease claim
  and its row, in the same statement as its first events.
"""

from __future__ import annotations

import select
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from uuid import UUID

import psycopg
from eventsourcing import postgres as library
from eventsourcing.persistence import (
    AggregateRecorder,
    ApplicationRecorder,
    InterfaceError,
    Notification,
    OperationalError,
    StoredEvent,
)
from eventsourcing.utils import Environment, retry
from psycopg.rows import tuple_row
from psycopg.sql import SQL, Composed, Identifier, Literal
from psycopg_pool.base import AttemptWithBackoff

from persistence import kind_index
from persistence.commit_guard import CommitGuard, CommitRefusedError
from persistence.version_reads import select_at_sql, split_rows

INSERT_FUNCTION = "holdpoint_insert_events"
REFUSE_FUNCTION = "holdpoint_refuse_change"
PURGE_FUNCTION = "holdpoint_purge_events"
PURGED = "holdpoint_purged"
_MARKS = {"id": "%(id)s", "version": "%(version)s::bigint", "upto": "%(upto)s::bigint"}


def select_at_statement(schema: str, events: str, snapshots: str | None, *, head: bool) -> bytes:
    """`persistence.version_reads.select_at_sql` on the schema's tables, as PostgreSQL reads it."""

    def qualified(name: str) -> str:
        return SQL("{}.{}").format(Identifier(schema), Identifier(name)).as_string(None)

    sql = select_at_sql(
        qualified(events), None if snapshots is None else qualified(snapshots), _MARKS, head=head
    )
    return sql.encode()


# The library retries a failed statement ten times, each try waiting up to the
# connect timeout for a connection: with the database down, a request would hang
# for a minute. Two tries: one more for a connection that died while idle (the
# pool also pings a connection it hands out when the server has written to it:
# see QuickReconnectPool), then the error, which clients get as 503 with
# Retry-After.
ATTEMPTS = 2
RECONNECT_DELAY_CAP = 1.0  # seconds between a lost connection's reconnection attempts


class CappedBackoff(AttemptWithBackoff):
    """psycopg_pool's backoff doubles without bound: after a ten-second outage the
    next attempt may be eight seconds away, after five minutes, minutes away, and
    requests time out waiting for a connection long after the database is back."""

    def update_delay(self, now: float) -> None:
        super().update_delay(now)
        self.delay = min(self.delay, RECONNECT_DELAY_CAP)


class QuickReconnectPool(library.ConnectionPool[Any]):
    """The library's pool, recovering at once when the database comes back.

    Lost connections are retried with `CappedBackoff`. And when a connection
    handed out fails its check (pre-ping), every idle one is checked at once: after
    a restart they are all dead, and psycopg_pool would otherwise try them one by
    one, waiting 1 s, then 2 s, between them, and time the request out.

    The check costs a round trip only when the connection may be dead
    (`may_be_dead`): a server that stops, restarts or ends an idle session
    first writes to its socket, which then reads as ready. A connection that
    dies silently (a network cut) is found by the statement itself, which is
    tried again on another connection (ATTEMPTS).

    Idle connections are handed out last in, first out (psycopg_pool's are
    first in, first out), as PgBouncer does by default: the connection handed
    out is the one most recently used, whose server process has already
    loaded the catalog entries of the tables and the plans psycopg prepared.
    Taken in turns, each connection's first read paid that process's catalog
    loading (several ms), and a statement needed five uses on each connection
    before psycopg prepared it. Under load every connection is in use either
    way; and when the pool shrinks (`max_idle`), it closes the connection idle
    the longest.
    """

    def _get_ready_connection(self, timeout: float | None) -> Any:
        """psycopg_pool's, taking the most recently returned connection (its
        `_add_to_pool` appends returned ones on the right)."""
        if not self._pool or (timeout is not None and timeout <= 0.0):
            return super()._get_ready_connection(timeout)  # None (wait), or it refuses
        conn = self._pool.pop()
        self._nconns_min = min(self._nconns_min, len(self._pool))
        return conn

    def _check_connection(self, conn: Any) -> None:
        if not may_be_dead(conn):
            return
        try:
            super()._check_connection(conn)
        except Exception:
            self.check()
            raise

    def _add_connection(self, attempt: AttemptWithBackoff | None, growing: bool = False) -> None:
        if attempt is None:
            attempt = CappedBackoff(timeout=self.reconnect_timeout)
        super()._add_connection(attempt, growing=growing)


def may_be_dead(conn: psycopg.Connection[Any]) -> bool:
    """Whether an idle connection needs a ping: it is closed, or the server has
    written to it (an idle connection is sent nothing else than its end: the
    message that it is being terminated, then the close; anything else, such as
    a notice, only costs the ping)."""
    if conn.closed or conn.broken:
        return True
    try:
        descriptor = conn.pgconn.socket
    except psycopg.OperationalError:
        return True
    poller = select.poll()
    poller.register(descriptor, select.POLLIN | select.POLLPRI)
    return bool(poller.poll(0))


def _tried(method: Any) -> Any:
    return retry((InterfaceError, OperationalError), max_attempts=ATTEMPTS, wait=0.2)(
        method.__wrapped__
    )


class AppendOnlyPostgresApplicationRecorder(library.PostgresApplicationRecorder):
    """Inserts through one locking function; the table refuses changes."""

    library_notifications = _tried(library.PostgresApplicationRecorder.select_notifications)
    max_notification_id = _tried(library.PostgresApplicationRecorder.max_notification_id)

    def __init__(self, datastore: library.PostgresDatastore, **kwargs: Any) -> None:
        super().__init__(datastore, **kwargs)
        schema = Identifier(self.datastore.schema)
        table = Identifier(self.events_table_name)
        self._insert_statements: dict[int, bytes] = {}
        self._guarded_statements: dict[tuple[bytes, str, str], bytes] = {}
        self._select_at_statements: dict[tuple[str | None, bool], bytes] = {}
        self._select_events_statements: dict[tuple[bool, bool, bool, bool], bytes] = {}
        signature = SQL("{schema}.{function}(uuid[], bigint[], text[], bytea[])").format(
            schema=schema, function=Identifier(INSERT_FUNCTION)
        )
        self.sql_create_statements[self.create_insert_function_statement_index] = SQL(
            "CREATE OR REPLACE FUNCTION {schema}.{function}("
            "ids uuid[], versions bigint[], topics text[], states bytea[]) "
            "RETURNS SETOF bigint LANGUAGE plpgsql SECURITY DEFINER "
            "SET search_path = pg_catalog, pg_temp AS $BODY$ "
            "BEGIN "
            "  SET LOCAL lock_timeout = '{lock_timeout}s'; "
            "  LOCK TABLE {schema}.{table} IN EXCLUSIVE MODE; "
            "  NOTIFY {channel}; "
            "  RETURN QUERY INSERT INTO {schema}.{table} "
            "    (originator_id, originator_version, topic, state) "
            "    SELECT * FROM unnest(ids, versions, topics, states) "
            "    RETURNING notification_id; "
            "END; $BODY$"
        ).format(
            schema=schema,
            function=Identifier(INSERT_FUNCTION),
            lock_timeout=self.datastore.lock_timeout,
            table=table,
            channel=Identifier(self.channel_name),
        )
        self.sql_create_statements.append(
            SQL("REVOKE ALL ON FUNCTION {signature} FROM PUBLIC").format(signature=signature)
        )
        self.sql_create_statements.extend(self._append_only_statements(schema, table))
        self.sql_create_statements.append(
            SQL(
                "CREATE INDEX IF NOT EXISTS {index} ON {schema}.{table} (topic, notification_id) "
                f"WHERE {kind_index.condition()}"
            ).format(
                index=Identifier(kind_index.index_name(self.events_table_name)),
                schema=schema,
                table=table,
            )
        )

    @retry((InterfaceError, OperationalError), max_attempts=ATTEMPTS, wait=0.2)
    def select_events(
        self,
        originator_id: UUID | str,
        *,
        gt: int | None = None,
        lte: int | None = None,
        desc: bool = False,
        limit: int | None = None,
    ) -> Sequence[StoredEvent]:
        """The library's read of an aggregate's events (the same statement and rows)."""
        shape = (gt is not None, lte is not None, desc, limit is not None)
        statement = self._select_events_statements.get(shape)
        if statement is None:
            statement = self._select_events_statements[shape] = self._events_statement(*shape)
        params = [originator_id, *(value for value in (gt, lte, limit) if value is not None)]
        with (
            self.datastore.get_connection() as connection,
            connection.cursor(row_factory=tuple_row) as cursor,
        ):
            cursor.execute(statement, params, prepare=True)
            return [
                StoredEvent(
                    originator_id=originator_id,
                    originator_version=originator_version,
                    topic=topic,
                    state=bytes(state),
                )
                for originator_id, originator_version, topic, state in cursor.fetchall()
            ]

    def _events_statement(self, gt: bool, lte: bool, desc: bool, limit: bool) -> bytes:
        """The statement of `select_events` for the bounds given, rendered."""
        terms = ["originator_id = %s"]
        terms += ["originator_version > %s"] * gt + ["originator_version <= %s"] * lte
        statement = SQL(
            "SELECT originator_id, originator_version, topic, state FROM {schema}.{table} "
            "WHERE "
            + " AND ".join(terms)
            + " ORDER BY originator_version "
            + ("DESC" if desc else "ASC")
            + (" LIMIT %s" if limit else "")
        ).format(schema=Identifier(self.datastore.schema), table=Identifier(self.events_table_name))
        return statement.as_bytes(None)

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
        (`persistence.kind_index`)."""
        if not kind_index.rare(topics):
            found: Sequence[Notification] = self.library_notifications(
                start, limit, stop, topics, inclusive_of_start=inclusive_of_start
            )
        else:
            found = self._rare_notifications(start, limit, stop, list(topics), inclusive_of_start)
        return found

    @retry((InterfaceError, OperationalError), max_attempts=ATTEMPTS, wait=0.2)
    def _rare_notifications(
        self, start: int | None, limit: int, stop: int | None, topics: list[str], inclusive: bool
    ) -> list[Notification]:
        terms = [kind_index.condition(), "topic = ANY(%s)"]
        params: list[Any] = [topics]
        if start is not None:
            terms.append("notification_id >= %s" if inclusive else "notification_id > %s")
            params.append(start)
        if stop is not None:
            terms.append("notification_id <= %s")
            params.append(stop)
        statement = SQL(
            "SELECT notification_id, originator_id, originator_version, topic, state "
            "FROM {schema}.{table} WHERE " + " AND ".join(terms) + " "
            "ORDER BY notification_id LIMIT %s"
        ).format(schema=Identifier(self.datastore.schema), table=Identifier(self.events_table_name))
        with self.datastore.get_connection() as connection, connection.cursor() as cursor:
            cursor.execute(statement, [*params, limit])
            return [
                Notification(
                    id=row["notification_id"],
                    originator_id=row["originator_id"],
                    originator_version=row["originator_version"],
                    topic=row["topic"],
                    state=bytes(row["state"]),
                )
                for row in cursor.fetchall()
            ]

    @retry((InterfaceError, OperationalError), max_attempts=ATTEMPTS, wait=0.2)
    def insert_events(
        self, stored_events: Sequence[StoredEvent], *, guard: CommitGuard | None = None, **_: Any
    ) -> Sequence[int]:
        """One statement, one round trip: the function locks, notifies and inserts.

        The events go as scalar parameters that the server gathers into four
        arrays: psycopg adapts scalars far faster than lists, and there is one
        prepared statement per batch size. With a `guard`, its expressions lead
        the statement and the function runs once per row of `guard`: none, and
        the statement writes nothing and CommitRefusedError is raised.
        """
        params: list[Any] = [event.originator_id for event in stored_events]
        params += [event.originator_version for event in stored_events]
        params += [event.topic for event in stored_events]
        params += [event.state for event in stored_events]
        with self.datastore.get_connection() as connection, connection.cursor() as cursor:
            statement = self._insert_statement(len(stored_events), connection)
            if guard is not None:
                statement = self._guarded(statement, guard)
                params = [*guard.params, *params, *guard.after_params]
            cursor.execute(statement, params, prepare=True)
            ids = [row[INSERT_FUNCTION] for row in cursor.fetchall()]
        if guard is not None:
            if not ids:
                raise CommitRefusedError(guard)
            guard.applied = True
        return ids

    def _guarded(self, statement: bytes, guard: CommitGuard) -> bytes:
        """`statement` (SELECT * FROM f(...)) as f(...) called once per row of the guard,
        its ids `appended (id)`, the guard's `after` expressions following."""
        key = (statement, guard.ctes, guard.after)
        guarded = self._guarded_statements.get(key)
        if guarded is None:
            call = statement.removeprefix(b"SELECT * FROM ")
            name = INSERT_FUNCTION.encode()
            after = b", " + guard.after.encode() if guard.after else b""
            guarded = b"WITH %b, appended AS (SELECT %b AS id FROM guard)%b " % (
                guard.ctes.encode(),
                call,
                after,
            )
            guarded += b"SELECT id AS %b FROM appended" % name
            self._guarded_statements[key] = guarded
        return guarded

    def _insert_statement(self, size: int, connection: Any) -> bytes:
        """The call for `size` events, rendered once (a Composed renders on every use)."""
        statement = self._insert_statements.get(size)
        if statement is None:

            def array(cast: str) -> Composed:
                return SQL("ARRAY[{}]").format(SQL(", ").join([SQL(f"%s::{cast}")] * size))

            composed = SQL(
                "SELECT * FROM {schema}.{function}({ids}, {versions}, {topics}, {states})"
            ).format(
                schema=Identifier(self.datastore.schema),
                function=Identifier(INSERT_FUNCTION),
                ids=array("uuid"),
                versions=array("bigint"),
                topics=array("text"),
                states=array("bytea"),
            )
            statement = composed.as_bytes(connection)
            self._insert_statements[size] = statement
        return statement

    @retry((InterfaceError, OperationalError), max_attempts=ATTEMPTS, wait=0.2)
    def select_at_version(
        self,
        snapshots: AggregateRecorder | None,
        originator_id: UUID,
        version: int,
        upto: int,
        *,
        head: bool,
    ) -> tuple[StoredEvent | None, list[StoredEvent], int | None]:
        """A thread as of `version`, in one round trip (`domain.record.application.ReadsAtVersion`,
        `persistence.version_reads`).

        Not prepared: on a connection freshly made, preparing would cost one
        round trip more (psycopg prepares it by itself from its fifth use on a
        connection).
        """
        with self.datastore.get_connection() as connection:
            statement = self._select_at_statement(snapshots, head=head)
            params = {"id": originator_id, "version": version, "upto": upto}
            rows = connection.execute(statement, params).fetchall()
        return split_rows(originator_id, rows)

    def _select_at_statement(self, snapshots: AggregateRecorder | None, *, head: bool) -> bytes:
        """The statement of `select_at_version`, rendered once per snapshots table and head."""
        table = getattr(snapshots, "events_table_name", None)
        statement = self._select_at_statements.get((table, head))
        if statement is None:
            schema = self.datastore.schema
            statement = select_at_statement(schema, self.events_table_name, table, head=head)
            self._select_at_statements[table, head] = statement
        return statement

    def may_purge(self) -> str | None:
        """None if this connection's role may call the purge function; else who it is."""
        signature = SQL("{schema}.{function}(uuid, bigint, bigint, uuid[], bigint[])").format(
            schema=Identifier(self.datastore.schema), function=Identifier(PURGE_FUNCTION)
        )
        with self.datastore.transaction(commit=False) as cursor:
            cursor.execute(
                SQL(
                    "SELECT current_user AS role, has_function_privilege({}, 'EXECUTE') AS may"
                ).format(Literal(signature.as_string(None)))
            )
            row = cursor.fetchone()
        return None if row is not None and row["may"] else str(row["role"] if row else "?")

    def purge(
        self,
        record: tuple[UUID, int],
        operation: int,
        targets: Sequence[tuple[UUID, int]],
        snapshots: str | None,
    ) -> int:
        """Delete the events of each (aggregate, up to position) named by the recorded purge
        `record` (its aggregate and version), and their snapshots, in one transaction,
        through the owner's function: the events deleted."""
        schema = Identifier(self.datastore.schema)
        ids = [aggregate for aggregate, _ in targets]
        uptos = [upto for _, upto in targets]
        with self.datastore.transaction(commit=True) as cursor:
            cursor.execute(
                SQL("SELECT {schema}.{function}(%s, %s, %s, %s, %s) AS deleted").format(
                    schema=schema, function=Identifier(PURGE_FUNCTION)
                ),
                (record[0], record[1], operation, ids, uptos),
            )
            row = cursor.fetchone()
            if snapshots is not None:
                cursor.execute(
                    SQL("DELETE FROM {schema}.{table} WHERE originator_id = ANY(%s)").format(
                        schema=schema, table=Identifier(snapshots)
                    ),
                    (ids,),
                )
        return int(row["deleted"]) if row is not None else 0

    def _append_only_statements(self, schema: Identifier, table: Identifier) -> list[Composed]:
        """Triggers refusing UPDATE, TRUNCATE and any DELETE but a recorded purge's
        (`purge`), and the purge's table and function, which only the owner may use."""
        refuse, purged = Identifier(REFUSE_FUNCTION), Identifier(PURGED)
        function = Identifier(PURGE_FUNCTION)
        return [
            SQL(
                "CREATE TABLE IF NOT EXISTS {schema}.{purged} (originator_id uuid NOT NULL, "
                "upto bigint NOT NULL, operation bigint NOT NULL)"
            ).format(schema=schema, purged=purged),
            SQL("REVOKE ALL ON {schema}.{purged} FROM PUBLIC").format(schema=schema, purged=purged),
            SQL(
                "CREATE OR REPLACE FUNCTION {schema}.{function}(record uuid, "
                "record_version bigint, operation bigint, ids uuid[], uptos bigint[]) "
                "RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER "
                "SET search_path = pg_catalog, pg_temp AS $BODY$ "
                "DECLARE listed text; deleted bigint; "
                "BEGIN "
                "  SELECT convert_from(state, 'UTF8') INTO listed FROM {schema}.{table} "
                "    WHERE originator_id = record AND originator_version = record_version; "
                "  IF listed IS NULL OR EXISTS (SELECT 1 FROM unnest(ids) AS i "
                "      WHERE strpos(listed, replace(i::text, '-', '')) = 0) THEN "
                "    RAISE EXCEPTION 'holdpoint purges only what a recorded purge names' "
                "    USING ERRCODE = 'insufficient_privilege'; "
                "  END IF; "
                "  INSERT INTO {schema}.{purged} SELECT i, u, operation FROM unnest(ids, uptos) "
                "    AS t(i, u); "
                "  DELETE FROM {schema}.{table} e USING unnest(ids, uptos) AS t(i, u) "
                "    WHERE e.originator_id = t.i AND e.notification_id <= t.u; "
                "  GET DIAGNOSTICS deleted = ROW_COUNT; "
                "  RETURN deleted; "
                "END; $BODY$"
            ).format(schema=schema, function=function, table=table, purged=purged),
            SQL(
                "REVOKE ALL ON FUNCTION {schema}.{function}(uuid, bigint, bigint, uuid[], "
                "bigint[]) FROM PUBLIC"
            ).format(schema=schema, function=function),
            SQL(
                "CREATE OR REPLACE FUNCTION {schema}.{refuse}() RETURNS trigger "
                "LANGUAGE plpgsql AS $BODY$ BEGIN "
                "IF TG_OP = 'DELETE' AND EXISTS (SELECT 1 FROM {schema}.{purged} p "
                "  WHERE p.originator_id = OLD.originator_id "
                "  AND OLD.notification_id <= p.upto) THEN RETURN OLD; END IF; "
                "RAISE EXCEPTION 'holdpoint events are append-only: % refused', TG_OP "
                "USING ERRCODE = 'insufficient_privilege'; END; $BODY$"
            ).format(schema=schema, refuse=refuse, purged=purged),
            SQL(
                "CREATE OR REPLACE TRIGGER holdpoint_no_update_or_delete "
                "BEFORE UPDATE OR DELETE ON {schema}.{table} "
                "FOR EACH ROW EXECUTE FUNCTION {schema}.{refuse}()"
            ).format(schema=schema, table=table, refuse=refuse),
            SQL(
                "CREATE OR REPLACE TRIGGER holdpoint_no_truncate "
                "BEFORE TRUNCATE ON {schema}.{table} "
                "FOR EACH STATEMENT EXECUTE FUNCTION {schema}.{refuse}()"
            ).format(schema=schema, table=table, refuse=refuse),
        ]


class Factory(library.PostgresFactory):  # the module's only factory, as the library requires
    """`PERSISTENCE_MODULE=persistence.postgres`."""

    application_recorder_class = AppendOnlyPostgresApplicationRecorder

    def __init__(self, env: Environment | dict[str, str] | None) -> None:
        super().__init__(env)
        self.datastore.pool.__class__ = QuickReconnectPool  # the same pool, its state kept
        probe_connection(self._connect_params(), float(self.datastore.pool.timeout))
        self.datastore.enable_db_functions = True
        if self.env_create_table() and self.datastore.schema != "public":
            with self._ddl_lock(), self.datastore.transaction(commit=True) as cursor:
                cursor.execute(
                    SQL("CREATE SCHEMA IF NOT EXISTS {}").format(Identifier(self.datastore.schema))
                )

    def application_recorder(self) -> ApplicationRecorder:
        if not self.env_create_table():
            self._check_schema_usage()  # the library's recorder reads the schema at once
            recorder = super().application_recorder()
            self._check_tables_exist(f"{self.env.name.lower()}_events")
            return recorder
        with self._ddl_lock():
            return super().application_recorder()

    def aggregate_recorder(self, purpose: str = "events") -> AggregateRecorder:
        if not self.env_create_table():
            return super().aggregate_recorder(purpose)
        with self._ddl_lock():
            return super().aggregate_recorder(purpose)

    def _connect_params(self) -> dict[str, Any]:
        """The pool's connection settings, for the few direct connections we make."""
        kwargs = self.datastore.pool.kwargs
        assert isinstance(kwargs, dict)
        return {k: v for k, v in kwargs.items() if k != "row_factory"}

    @contextmanager
    def _ddl_lock(self) -> Iterator[None]:
        """Serialise table creation across processes that open the store at once.

        Concurrent `CREATE OR REPLACE FUNCTION/TRIGGER` deadlock, and
        concurrent `CREATE SCHEMA/TYPE` collide; a session advisory lock on
        the schema's name makes the second opener wait for the first.
        """
        with psycopg.connect(**self._connect_params(), autocommit=True) as connection:
            key = f"holdpoint-ddl:{self.datastore.schema}"
            connection.execute("SELECT pg_advisory_lock(hashtext(%s))", (key,))
            try:
                yield
            finally:
                connection.execute("SELECT pg_advisory_unlock(hashtext(%s))", (key,))

    def _check_schema_usage(self) -> None:
        """With create_tables=no, a role without USAGE on the schema is told the grant."""
        schema = self.datastore.schema
        with psycopg.connect(**self._connect_params()) as connection:
            row = connection.execute(
                "SELECT current_user, has_schema_privilege(oid, 'USAGE') "
                "FROM pg_namespace WHERE nspname = %s",
                (schema,),
            ).fetchone()
        if row is not None and not row[1]:
            role = str(row[0])
            msg = (
                f"the role {role} lacks USAGE on the schema {schema}: as the owner, "
                f"GRANT USAGE ON SCHEMA {quoted(schema)} TO {quoted(role)} "
                f"(`holdpoint db init --role {role}` prints every grant the servers need)"
            )
            raise OperationalError(msg)

    def _check_tables_exist(self, table: str) -> None:
        """With create_tables=no, say so at once if `holdpoint db init` never ran."""
        qualified = f"{self.datastore.schema}.{table}"
        with self.datastore.transaction(commit=False) as cursor:
            cursor.execute("SELECT to_regclass(%s) AS found", (qualified,))
            row = cursor.fetchone()
        if row is None or row["found"] is None:
            msg = (
                f"the table {qualified} does not exist: run `holdpoint db init` "
                "as the role that owns the tables (this store opens with create_tables=no)"
            )
            raise OperationalError(msg)


def quoted(name: str) -> str:
    """A PostgreSQL identifier as SQL: bare when it may be (a lower-case ASCII letter or _,
    then those or digits), else in double quotes."""
    bare = name[:1].isalpha() or name[:1] == "_"
    if bare and name.isascii() and all(c.islower() or c.isdigit() or c == "_" for c in name):
        return name
    return '"' + name.replace('"', '""') + '"'


TRANSIENT_CAUSES = ("connection refused", "starting up", "timeout expired", "shutting down")


def probe_connection(params: dict[str, Any], timeout: float) -> None:
    """Connect once, so that a wrong password, a missing database or an
    unreachable host is reported with its real cause, at once, instead of the
    pool's "couldn't get a connection". Refused connections and a server that
    is starting up are retried with backoff for at most `timeout` seconds.
    """
    deadline = time.monotonic() + timeout
    delay = 0.1
    while True:
        try:
            psycopg.connect(**params, connect_timeout=max(1, int(timeout))).close()
        except psycopg.OperationalError as error:
            cause = _cause(error)
            transient = any(word in str(error).lower() for word in TRANSIENT_CAUSES)
            if not transient or time.monotonic() + delay > deadline:
                host = f"{params.get('host')}:{params.get('port')}"
                msg = f"{cause} (PostgreSQL at {host}, database {params.get('dbname')!r})"
                raise OperationalError(msg) from None
            time.sleep(delay)
            delay = min(delay * 2, 1.0)
        else:
            return


def _cause(error: BaseException) -> str:
    """'password authentication failed for user "x"', 'Connection refused', ..."""
    first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return first.rpartition(" failed: ")[2].removeprefix("FATAL:").strip()
