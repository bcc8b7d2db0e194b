"""The two sides (Holdpoint and LangGraph) and fresh checkpointers for each.

Every repetition gets a fresh checkpointer: a new in-memory saver, or a new
SQLite file in its own scratch directory.
"""

from __future__ import annotations

import importlib
import sqlite3
import tempfile
import traceback
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from bench.graphs import Api

HOLDPOINT = "Holdpoint"
LANGGRAPH = "LangGraph"

Opener = Callable[[Path], AbstractContextManager[Any]]


@dataclass(frozen=True)
class Side:
    """One implementation under test: its API and how to open its stores."""

    api: Api
    memory: Callable[[], AbstractContextManager[Any]]
    sqlite: Opener

    @property
    def name(self) -> str:
        """The side's display name."""
        return self.api.name


def _close(saver: object) -> None:
    close = getattr(saver, "close", None)
    if callable(close):
        close()


def _langgraph() -> Side:
    @contextmanager
    def memory() -> Iterator[Any]:
        yield InMemorySaver()

    @contextmanager
    def sqlite(path: Path) -> Iterator[Any]:
        conn = sqlite3.connect(path, check_same_thread=False)
        try:
            saver = SqliteSaver(conn)
            saver.setup()
            yield saver
        finally:
            conn.close()

    api = Api(LANGGRAPH, StateGraph, START, END, interrupt, Command)
    return Side(api, memory, sqlite)


def _holdpoint() -> Side:
    graph = importlib.import_module("domain.graph")
    types = importlib.import_module("domain.types")
    memory_module = importlib.import_module("domain.checkpoint.memory")
    store_module = importlib.import_module("domain.store")

    @contextmanager
    def memory() -> Iterator[Any]:
        saver = memory_module.InMemorySaver()
        try:
            yield saver
        finally:
            _close(saver)

    @contextmanager
    def sqlite(path: Path) -> Iterator[Any]:
        store = store_module.open_store(f"sqlite:///{path}")
        try:
            yield store
        finally:
            store.close()

    api = Api(
        HOLDPOINT,
        graph.StateGraph,
        graph.START,
        graph.END,
        types.interrupt,
        types.Command,
    )
    return Side(api, memory, sqlite)


def load_sides() -> tuple[list[Side], dict[str, str]]:
    """Load both sides, Holdpoint first; report a side that fails to import."""
    sides: list[Side] = []
    missing: dict[str, str] = {}
    for name, loader in ((HOLDPOINT, _holdpoint), (LANGGRAPH, _langgraph)):
        try:
            sides.append(loader())
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
