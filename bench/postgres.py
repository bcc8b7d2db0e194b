"""The PostgreSQL server the benchmarks use, and fresh storage on it.

The server is found at ``HOLDPOINT_BENCH_POSTGRES_URL`` (default: the one
``bash .ci/postgres.sh`` sets up on localhost). Holdpoint gets a new schema per
repetition, dropped afterwards (its events table refuses TRUNCATE by design);
LangGraph's ``PostgresSaver`` gets its own database, ``lgbench``, whose
checkpoint tables are truncated before each repetition; the raw-driver
baseline gets a new schema holding one bare table; Aegra's server, which runs
its own migrations, gets a new database per repetition, dropped afterwards.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import urlsplit

import psycopg
from psycopg import sql

DEFAULT_URL = "postgresql://holdpoint:holdpoint@127.0.0.1:5432/holdpoint_test"
URL_VARIABLE = "HOLDPOINT_BENCH_POSTGRES_URL"
LANGGRAPH_DATABASE = "lgbench"
LANGGRAPH_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")
CONNECT_TIMEOUT = 3
SCHEMA_PREFIX = "bench_"


@dataclass(frozen=True)
class Server:
    """A reachable PostgreSQL server: the URLs each side uses, and what it is."""

    url: str
    langgraph_url: str
    version: str
    settings: str

    def holdpoint_url(self, schema: str) -> str:
        """Return Holdpoint's store URL for ``schema``."""
        return f"{self.url}?schema={schema}"


def configured_url() -> str:
    """Return the server URL the benchmarks use (no ``?`` options)."""
    return os.environ.get(URL_VARIABLE) or DEFAULT_URL


def redacted(url: str) -> str:
    """Return ``url`` with its password replaced by ``***``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@", 1)).geturl()


def _with_database(url: str, database: str) -> str:
    return urlsplit(url)._replace(path=f"/{database}", query="").geturl()


def _ensure_database(conn: psycopg.Connection[tuple[object, ...]], name: str) -> None:
    found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
    if found is None:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def connect() -> tuple[Server | None, str | None]:
    """Return the server, or None and why the PostgreSQL benchmarks cannot run.

    Creates LangGraph's database when it is missing.
    """
    url = configured_url()
    try:
        import langgraph.checkpoint.postgres  # noqa: F401, PLC0415
    except ImportError as exc:
        return None, f"langgraph-checkpoint-postgres is not installed ({exc})"
    if urlsplit(url).query:
        return None, f"{URL_VARIABLE} must have no ?options: {redacted(url)}"
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT) as conn:
            version = conn.info.parameter_status("server_version") or "?"
            names = ("fsync", "synchronous_commit", "shared_buffers")
            settings = ", ".join(
                f"{name}={(conn.execute(f'SHOW {name}').fetchone() or ('?',))[0]}" for name in names
            )
            _ensure_database(conn, LANGGRAPH_DATABASE)
    except psycopg.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return None, f"no PostgreSQL reachable at {redacted(url)} ({first})"
    return Server(url, _with_database(url, LANGGRAPH_DATABASE), version, settings), None


def new_schema_name() -> str:
    """Return a fresh, unique schema name."""
    return f"{SCHEMA_PREFIX}{uuid.uuid4().hex[:12]}"


@contextmanager
def fresh_database(server: Server, prefix: str) -> Iterator[str]:
    """Create an empty database named ``prefix`` and a random suffix; yield its URL; drop it.

    For a server that owns its tables (it creates them as it starts) and names them
    without a schema: a database of its own keeps each repetition's tables apart.
    """
    name = f"{prefix}{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server.url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield _with_database(server.url, name)
    finally:
        # FORCE: a connection the stopped server left behind must not keep the database
        drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        with psycopg.connect(server.url, autocommit=True) as conn:
            conn.execute(drop)


def drop_schema(server: Server, schema: str) -> None:
    """Drop ``schema`` and everything in it."""
    with psycopg.connect(server.url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def truncate_langgraph(server: Server) -> None:
    """Empty LangGraph's checkpoint tables (its migrations table is kept)."""
    tables = sql.SQL(", ").join(sql.Identifier(t) for t in LANGGRAPH_TABLES)
    with psycopg.connect(server.langgraph_url, autocommit=True) as conn:
        conn.execute(sql.SQL("TRUNCATE {}").format(tables))


def count_checkpoints(server: Server) -> int:
    """Return the number of rows in LangGraph's checkpoints table."""
    with psycopg.connect(server.langgraph_url, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM checkpoints").fetchone()
    return int(row[0]) if row else 0


@contextmanager
def raw_table(server: Server) -> Iterator[sql.Composed]:
    """Create a bare table like an events table in a new schema; drop it afterwards.

    Yields the INSERT statement: ``(id uuid, version int, state bytea)``, the
    primary key being ``(id, version)``.
    """
    schema = new_schema_name()
    table = sql.Identifier(schema, "rows")
    with psycopg.connect(server.url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        conn.execute(
            sql.SQL(
                "CREATE TABLE {} (id uuid NOT NULL, version integer NOT NULL, "
                "state bytea NOT NULL, PRIMARY KEY (id, version))"
            ).format(table)
        )
    try:
        yield sql.SQL("INSERT INTO {} (id, version, state) VALUES (%s, %s, %s)").format(table)
    finally:
        drop_schema(server, schema)


def settle(server: Server, *tables: str) -> bool:
    """Bring freshly bulk-written tables to rest, untimed, as a live log is.

    ``VACUUM (ANALYZE)`` sets the rows' hint bits and the visibility map and
    gathers statistics (what autovacuum does to a live log), and a
    ``CHECKPOINT`` writes out the pages that dirtied: the timed reads that
    follow then neither write hint bits nor compete with the checkpointer.
    The CHECKPOINT needs ``pg_checkpoint`` (``.ci/postgres.sh`` grants it);
    returns whether it was taken.
    """
    with psycopg.connect(server.url, autocommit=True) as conn:
        for table in tables:
            conn.execute(sql.SQL("VACUUM (ANALYZE) {}").format(sql.SQL(table)))
        try:
            conn.execute("CHECKPOINT")
        except psycopg.errors.InsufficientPrivilege:
            return False
    return True


def schema_tables(server: Server, schema: str) -> list[str]:
    """The tables of ``schema``, each as a quoted, schema-qualified name."""
    with psycopg.connect(server.url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s ORDER BY tablename", (schema,)
        ).fetchall()
        return [sql.Identifier(schema, name).as_string(conn) for (name,) in rows]


def schema_bytes(server: Server, schema: str) -> int:
    """Bytes on disk of every table of ``schema``, with their indexes and TOAST."""
    with psycopg.connect(server.url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s "
            "AND c.relkind = 'r'",
            (schema,),
        ).fetchone()
    return int(row[0]) if row else 0
