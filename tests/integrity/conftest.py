"""A real store with a few threads recorded, and an attacker's raw access to its table."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from domain.record.application import Workflows
from domain.record.store import open_store
from domain.types import Command
from tests.conftest import store_url
from tests.graphs import refund_graph
from tests.integrity.tamper import Tamper

THREADS = ("t1", "t2", "t3")
EVENTS_PER_THREAD = 9


def record_threads(store: Workflows, threads: tuple[str, ...] = THREADS) -> None:
    """Refund cycles, interleaved in the log: pause all, resume all, edit all (9 events each)."""
    graph = refund_graph(store)
    configs = [{"configurable": {"thread_id": thread}} for thread in threads]
    for config in configs:
        graph.invoke({"refund_amount": 250.0, "approved": False}, config)
    for config in configs:
        graph.invoke(Command(resume=True), config)
    for config in configs:
        graph.update_state(config, {"refund_amount": 200.0})


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A real database: a SQLite file, or a PostgreSQL schema of its own."""
    return store_url(request.param, tmp_path, request)


@pytest.fixture
def recorded(database_url: str) -> Iterator[tuple[str, Tamper]]:
    """(store URL, the attacker's access) of a store holding three refund threads."""
    with open_store(database_url) as store:
        record_threads(store)
        table = store.recorder.events_table_name  # type: ignore[attr-defined]
    tamper = Tamper(database_url, table)
    yield database_url, tamper
    tamper.close()
