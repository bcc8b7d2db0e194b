"""The floor under a durable step: one ~400-byte row inserted and committed, alone.

Benchmark 2 measures it beside the native engine's loop, in the same run and on the
same kind of storage, so that the engine's cost per step can be read as a multiple
of what the disk and the database cannot avoid: a SQLite file in WAL mode with
`synchronous=NORMAL` (Holdpoint's default), and an autocommit INSERT on PostgreSQL.
"""

from __future__ import annotations

import sqlite3
import uuid
from time import perf_counter_ns
from typing import TYPE_CHECKING

import psycopg

from bench.backends import scratch_dir
from bench.postgres import raw_table
from bench.stats import ms

if TYPE_CHECKING:
    from bench.harness import Settings
    from bench.postgres import Server
    from bench.report import Stats

ROW_BYTES = 400
WARM_UP_ROWS = 20
SQLITE_TABLE = (
    "CREATE TABLE rows (id BLOB NOT NULL, version INTEGER NOT NULL, "
    "state BLOB NOT NULL, PRIMARY KEY (id, version))"
)
SQLITE_INSERT = "INSERT INTO rows (id, version, state) VALUES (?, ?, ?)"


def payload(version: int) -> bytes:
    """A JSON document of ``ROW_BYTES`` bytes, different for each version."""
    head = f'{{"version": {version}, "pad": "'.encode()
    return head + b"x" * (ROW_BYTES - len(head) - 2) + b'"}'


def bare_commit_once(
    settings: Settings, backend: str, *, warm_up: bool, server: Server | None = None
) -> Stats:
    """Insert and commit ``loop_steps`` rows one at a time; the time per row.

    The keys are benchmark 2's (``run_s``, ``step_ms``), so that the rows sit in its table.
    """
    rows = WARM_UP_ROWS if warm_up else settings.loop_steps
    if backend == "sqlite":
        elapsed = _sqlite(rows)
    elif server is not None:
        elapsed = _postgres(server, rows)
    else:
        msg = f"no bare commit on {backend}"
        raise ValueError(msg)
    return {"run_s": elapsed / 1e9, "step_ms": ms(elapsed) / rows}


def _sqlite(rows: int) -> int:
    with scratch_dir() as directory:
        conn = sqlite3.connect(directory / "bare.db", isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(SQLITE_TABLE)
            thread = uuid.uuid4().bytes
            t0 = perf_counter_ns()
            for version in range(rows):
                conn.execute("BEGIN")
                conn.execute(SQLITE_INSERT, (thread, version, payload(version)))
                conn.execute("COMMIT")
            return perf_counter_ns() - t0
        finally:
            conn.close()


def _postgres(server: Server, rows: int) -> int:
    with raw_table(server) as insert, psycopg.connect(server.url, autocommit=True) as conn:
        thread = uuid.uuid4()
        t0 = perf_counter_ns()
        for version in range(rows):
            conn.execute(insert, (thread, version, payload(version)))
        return perf_counter_ns() - t0
