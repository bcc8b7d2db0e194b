"""The two sides (Holdpoint and LangGraph) and fresh checkpointers for each.

Every repetition gets a fresh checkpointer: a new in-memory saver, a new
SQLite file in its own scratch directory, or fresh PostgreSQL storage (a new
schema for Holdpoint, LangGraph's truncated tables in their own database: see
``bench/postgres.py``).
"""

from __future__ import annotations

import importlib
import os
import sqlite3
import tempfile
import traceback
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from bench.graphs import Api
from bench.postgres import Server, drop_schema, new_schema_name, truncate_langgraph

HOLDPOINT = "Holdpoint"
HOLDPOINT_FULL = "Holdpoint, synchronous=full"
LANGGRAPH = "LangGraph"
SIDE_ORDER = (HOLDPOINT, HOLDPOINT_FULL, LANGGRAPH)
# LangGraph's own server (the HTTP benchmarks) lives in an environment of its own
# (bench/langgraph-server.txt says why).
LANGGRAPH_VENV = Path(
    os.environ.get("HOLDPOINT_BENCH_LANGGRAPH_VENV")
    or Path(__file__).resolve().parent.parent / ".venv-langgraph"
)

Opener = Callable[[Path], AbstractContextManager[Any]]
PostgresOpener = Callable[[Server], AbstractContextManager[Any]]


@dataclass(frozen=True)
class Side:
    """One implementation under test: its API and how to open its stores.

    A ``variant`` is a second configuration of a side (Holdpoint's SQLite store
    at ``synchronous=full``), run for context where it changes the figures.
    """

    name: str
    api: Api
    memory: Callable[[], AbstractContextManager[Any]]
    sqlite: Opener
    postgres: PostgresOpener | None = None
    variant: bool = False


def _close(saver: object) -> None:
    close = getattr(saver, "close", None)
    if callable(close):
        close()


def _langgraph() -> list[Side]:
    @contextmanager
    def memory() -> Iterator[Any]:
        yield InMemorySaver()

    @contextmanager
    def sqlite(path: Path) -> Iterator[Any]:
        # LangGraph's SQLite and PostgreSQL savers are the bench extra's, imported where
        # used: the suite (tests/api/differential) imports bench without them
        from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: PLC0415

        conn = sqlite3.connect(path, check_same_thread=False)
        try:
            saver = SqliteSaver(conn)
            saver.setup()
            yield saver
        finally:
            conn.close()

    @contextmanager
    def postgres(server: Server) -> Iterator[Any]:
        from langgraph.checkpoint.postgres import PostgresSaver  # noqa: PLC0415

        with PostgresSaver.from_conn_string(server.langgraph_url) as saver:
            saver.setup()
            truncate_langgraph(server)
            yield saver

    api = Api(StateGraph, START, END, interrupt, Command)
    return [Side(LANGGRAPH, api, memory, sqlite, postgres)]


def _holdpoint() -> list[Side]:
    graph = importlib.import_module("domain.graph")
    types = importlib.import_module("domain.types")
    memory_module = importlib.import_module("domain.checkpoint.memory")
    store_module = importlib.import_module("domain.record.store")

    @contextmanager
    def memory() -> Iterator[Any]:
        saver = memory_module.InMemorySaver()
        try:
            yield saver
        finally:
            _close(saver)

    def sqlite_opener(options: str) -> Opener:
        @contextmanager
        def sqlite(path: Path) -> Iterator[Any]:
            store = store_module.open_store(f"sqlite:///{path}{options}")
            try:
                yield store
            finally:
                store.close()

        return sqlite

    @contextmanager
    def postgres(server: Server) -> Iterator[Any]:
        schema = new_schema_name()
        try:
            store = store_module.open_store(server.holdpoint_url(schema))
            try:
                yield store
            finally:
                store.close()
        finally:
            drop_schema(server, schema)

    api = Api(graph.StateGraph, graph.START, graph.END, types.interrupt, types.Command)
    return [
        Side(HOLDPOINT, api, memory, sqlite_opener(""), postgres),
        Side(HOLDPOINT_FULL, api, memory, sqlite_opener("?synchronous=full"), variant=True),
    ]


def load_sides() -> tuple[list[Side], dict[str, str]]:
    """Load both sides, Holdpoint first; report a side that fails to import."""
    sides: list[Side] = []
    missing: dict[str, str] = {}
    for name, loader in ((HOLDPOINT, _holdpoint), (LANGGRAPH, _langgraph)):
        try:
            sides += loader()
        except Exception as exc:
            missing[name] = "".join(traceback.format_exception_only(exc)).strip()
    return sides, missing


@contextmanager
def scratch_dir() -> Iterator[Path]:
    """Create a fresh, empty directory; remove it afterwards."""
    with tempfile.TemporaryDirectory(prefix="holdpoint-bench-") as name:
        yield Path(name)


def sqlite_bytes(path: Path) -> tuple[int, int]:
    """Return the sizes of a closed SQLite file and its WAL, after a checkpoint."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    finally:
        conn.close()
    wal = path.with_name(path.name + "-wal")
    return path.stat().st_size, wal.stat().st_size if wal.exists() else 0
