"""`holdpoint projector`, run for real: a separate process on a shared store.

The test records events in its own process; the projector, started as a
subprocess with HOLDPOINT_STORE, applies them. The test waits on positions
(it polls the positions table until a bounded deadline), never for a fixed
time. A projector stopped with SIGTERM exits cleanly; one killed with
SIGKILL in the middle of a catch-up loses and repeats nothing once a new one
has finished the work. On a SQLite file and on PostgreSQL.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path

import pytest

from domain.record.store import open_store
from projections.catalog import all_projections
from projections.pending_approvals import PendingApprovals
from projections.runner import POSITIONS, ProjectionRunner
from service.graph_loader import GraphSource, load_graph
from tests.projections.histories import (
    READ_MODEL_TABLES,
    REVIEWER,
    answer,
    approval_graph,
    ask_for,
    positions,
    read_models,
    record_history,
)

REPO = Path(__file__).resolve().parents[2]
DEADLINE = 30.0
ALL = {projection.name for projection in all_projections()}


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request):
    return str(request.getfixturevalue(f"{request.param}_url"))


@pytest.fixture
def store(store_url):
    with open_store(store_url) as store:
        yield store


@pytest.fixture
def reader(store):
    """A runner in the test process, to read positions and rows (and rebuild)."""
    runner = ProjectionRunner(store, all_projections())
    yield runner
    runner.close()


class Projector:
    """One projector subprocess, its output kept in files."""

    def __init__(self, store_url: str, folder: Path, *command: str) -> None:
        self.out, self.err = folder / "projector.out", folder / "projector.err"
        with self.out.open("w") as out, self.err.open("w") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-m", *command],
                cwd=REPO,
                env={**os.environ, "HOLDPOINT_STORE": store_url},
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
            )

    def stderr(self) -> str:
        return self.err.read_text()

    def stop(self, signum: int = signal.SIGTERM) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signum)
        return self.process.wait(timeout=DEADLINE)


@pytest.fixture
def start_projector(store_url, tmp_path) -> Iterator[Callable[..., Projector]]:
    started: list[Projector] = []

    def start(*command: str) -> Projector:
        folder = tmp_path / f"projector-{len(started)}"
        folder.mkdir()
        projector = Projector(store_url, folder, *command)
        started.append(projector)
        return projector

    yield start
    for projector in started:
        if projector.process.poll() is None:
            projector.process.kill()
            projector.process.wait(timeout=DEADLINE)


def holdpoint_projector(start: Callable[..., Projector]) -> Projector:
    return start("api.cli.main", "projector", "--poll", "0.05")


def wait_until(condition: Callable[[], bool], what: str, projector: Projector) -> None:
    """Poll `condition` until it holds; fail at the deadline or if the projector died."""
    deadline = time.monotonic() + DEADLINE
    while not condition():
        if projector.process.poll() is not None:
            pytest.fail(
                f"the projector exited ({projector.process.returncode}) before {what}:\n"
                f"{projector.stderr()}"
            )
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} within {DEADLINE} s:\n{projector.stderr()}")
        time.sleep(0.01)


def applied(reader: ProjectionRunner) -> dict[str, int]:
    """The positions table, read without waiting for the projector's batches.

    On SQLite a plain read (WAL mode) rather than the read models' own
    transaction, which takes the write lock and would wait for, and on a
    busy projector lose the race to, every batch.
    """
    if reader.db.dialect != "sqlite":
        return positions(reader.db)
    with closing(sqlite3.connect(reader.store.env["SQLITE_DBNAME"])) as connection:
        return dict(connection.execute(f"SELECT name, position FROM {POSITIONS}"))


def at_head(reader: ProjectionRunner) -> Callable[[], bool]:
    def check() -> bool:
        head, applied_ = reader.head(), applied(reader)
        return set(applied_) >= ALL and all(applied_[name] == head for name in ALL)

    return check


def test_a_projector_applies_what_is_recorded_and_stops_cleanly_on_sigterm(
    store, reader, start_projector
):
    # Given a projector running beside the test
    projector = holdpoint_projector(start_projector)

    # When events are recorded in the test's process
    record_history(store)

    # Then it brings every read model to the head of the log
    wait_until(at_head(reader), "read models at the head", projector)
    assert {row.thread_id for row in PendingApprovals(reader.db).page().items} == {
        "pending",
        "both",
        "fork",
    }

    # And when it is sent SIGTERM, it exits 0 and says so
    assert projector.stop(signal.SIGTERM) == 0
    assert "projector stopped" in projector.stderr()


def test_a_projector_killed_mid_work_and_restarted_loses_and_repeats_nothing(
    store, reader, start_projector
):
    # Given a long history no projector has applied yet
    refunds = approval_graph(store)
    for n in range(24):
        ask_for(refunds, f"t{n}")
        if n % 2:
            answer(refunds, f"t{n}")
    record_history(store)
    head = reader.head()

    # When a slowed projector (5 events per transaction, 5 ms per event) is
    # killed once it has committed a few batches
    projector = start_projector(
        "tests.projections.small_batch_projector", "5", "0.005", "--poll", "0.05"
    )

    def mid_work() -> bool:
        now = applied(reader).values()
        return any(p >= 20 for p in now) and any(p < head for p in now)

    wait_until(mid_work, "a catch-up under way", projector)
    assert projector.stop(signal.SIGKILL) == -signal.SIGKILL
    killed_at = applied(reader)
    assert min(killed_at.values()) < head

    # And more is recorded before a new projector starts and catches up
    for n in range(0, 24, 4):
        store.cancel(f"t{n}", REVIEWER, "stale")
    restarted = holdpoint_projector(start_projector)
    wait_until(at_head(reader), "read models at the head", restarted)
    assert restarted.stop(signal.SIGTERM) == 0

    # Then every read model, the oversight log the report reads included, is exactly
    # what a rebuild from zero makes
    projected = read_models(reader.db, tuple(READ_MODEL_TABLES))
    reader.rebuild()
    assert read_models(reader.db, tuple(READ_MODEL_TABLES)) == projected
    assert PendingApprovals(reader.db).page().total == 12 - 6 + 3


def test_two_projector_processes_at_once_apply_each_event_once(store, reader, start_projector):
    # Given a history no projector has applied yet
    refunds = approval_graph(store)
    for n in range(24):
        ask_for(refunds, f"t{n}")
        if n % 3:
            answer(refunds, f"t{n}")
    record_history(store)

    # When two projector processes, each 5 positions per transaction, catch up at once
    first, second = (
        start_projector("tests.projections.small_batch_projector", "5", "0.002", "--poll", "0.05")
        for _ in range(2)
    )
    wait_until(at_head(reader), "read models at the head", first)
    assert first.stop(signal.SIGTERM) == 0
    assert second.stop(signal.SIGTERM) == 0

    # Then every read model is what a rebuild from zero makes: no event applied twice
    projected = read_models(reader.db, tuple(READ_MODEL_TABLES))
    reader.rebuild()
    assert read_models(reader.db, tuple(READ_MODEL_TABLES)) == projected
    assert PendingApprovals(reader.db).page().total == 8 + 3


NOTES_GRAPH = """
from typing import Annotated, Any, TypedDict

from domain.graph import END, START, StateGraph
from domain.types import interrupt


def longest(old, new):
    return old if len(old) >= len(new) else new


class Notes(TypedDict):
    note: Annotated[str, longest]
    answer: Any


def ask(state):
    return {"answer": interrupt("ok?", deadline=0.01)}


builder = StateGraph(Notes)
builder.add_node("ask", ask)
builder.add_edge(START, "ask")
builder.add_edge("ask", END)
"""


def test_a_projector_expires_a_thread_with_its_own_reducers_once_given_its_graph(
    store, reader, start_projector, tmp_path
):
    # Given an overdue interrupt on a thread whose state has a reducer of its graph's own
    path = tmp_path / "notes.py"
    path.write_text(NOTES_GRAPH, encoding="utf-8")
    graph = load_graph(GraphSource("notes", path, "builder"), store)
    graph.invoke({"note": "x", "answer": None}, {"configurable": {"thread_id": "n1"}})

    def expired() -> bool:
        return any(type(e).__name__ == "InterruptExpired" for e in store.thread_events("n1"))

    # When a projector runs without the graph, it says so and leaves the thread
    blind = holdpoint_projector(start_projector)
    wait_until(lambda: "overdue interrupt left" in blind.stderr(), "a warning", blind)
    assert blind.stop(signal.SIGTERM) == 0
    assert not expired()

    # And when one runs with it, the expiry is recorded
    seeing = start_projector(
        "api.cli.main", "projector", "--poll", "0.05", "--graph", f"notes={path}:builder"
    )
    wait_until(expired, "the expiry", seeing)
    assert seeing.stop(signal.SIGTERM) == 0
