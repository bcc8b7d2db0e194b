"""A server killed with SIGKILL loses nothing: on a SQLite file and on PostgreSQL.

`holdpoint serve` runs as a subprocess and is killed while many runs commit
supersteps concurrently. After a restart on the same store: every thread's
hash chain verifies (so no event is missing, duplicated or torn), every run
that was answered before the kill is in the store, and the read models agree
with a rebuild from position zero. (A server killed while a node runs, whose
run another process takes over: tests/e2e/test_durable_runs.py; a projector
killed mid-batch: tests/projections/test_projector_process.py.)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from domain.record.store import open_store
from projections.catalog import runner_for
from tests.api.http_harness import postgres_schema_url
from tests.projections.histories import read_models
from tests.serving import Serving

ROOT = Path(__file__).resolve().parents[2]
GRAPH = """
import pathlib, threading
from typing import Any, TypedDict
from domain.graph import END, START, StateGraph
from domain.types import interrupt

FOLDER = pathlib.Path({folder!r})

class Refund(TypedDict):
    amount: float
    approved: Any
    paid: bool

def review(state: Refund) -> dict:
    return {{"approved": interrupt({{"amount": state["amount"]}})}}

def pay(state: Refund) -> dict:
    if (FOLDER / "hang").exists():
        (FOLDER / "entered").touch()
        threading.Event().wait()
    return {{"paid": bool(state["approved"])}}

builder = StateGraph(Refund)
builder.add_node("review", review)
builder.add_node("pay", pay)
builder.add_edge(START, "review")
builder.add_edge("review", "pay")
builder.add_edge("pay", END)
"""
REFUND = {"amount": 40.0, "approved": None, "paid": False}


def make_key(store: str, principal: str, role: str) -> str:
    made = subprocess.run(
        [sys.executable, "-m", "api.cli.main", "keys", "create", "--principal", principal,
         "--role", role],
        env={**os.environ, "HOLDPOINT_STORE": store, "PYTHONPATH": str(ROOT)},
        cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return made.stdout.strip().splitlines()[-1]


@contextmanager
def serving(store: str, graph: Path, *args: str) -> Iterator[tuple[Serving, str]]:
    server = Serving(store, "--graph", f"crash={graph}:builder", *args)
    [docs] = [line for line in server.banner("  API docs:") if "API docs:" in line]
    try:
        yield server, docs.split()[-1].removesuffix("/docs")
    finally:
        if server.process.poll() is None:
            server.stop()


def kill(server: Serving) -> None:
    server.process.send_signal(signal.SIGKILL)
    server.process.wait(timeout=30)


def wait_for_file(path: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} did not appear in {timeout} s"
        time.sleep(0.02)


def paused(http: httpx.Client, thread_id: str) -> str:
    http.post("/threads", json={"thread_id": thread_id, "graph_id": "crash"})
    answer = http.post(
        f"/threads/{thread_id}/runs/wait", json={"assistant_id": "crash", "input": REFUND}
    ).json()
    return answer["__interrupt__"][0]["id"]


def assert_store_is_whole(store_url: str, thread_ids: list[str]) -> None:
    """Every chain verifies, and the read models equal a rebuild from zero."""
    with open_store(store_url) as store:
        for thread_id in thread_ids:
            report = store.verify_chain(thread_id)
            assert report.ok, report
        runner = runner_for(store)
        try:
            runner.catch_up()
            caught_up = read_models(runner.db)
            runner.rebuild()
            assert read_models(runner.db) == caught_up
        finally:
            runner.close()


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request, tmp_path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'holdpoint.db'}"
        return
    with postgres_schema_url() as url:
        yield url


@pytest.fixture
def graph(tmp_path) -> Path:
    path = tmp_path / "crash_graph.py"
    path.write_text(GRAPH.format(folder=str(tmp_path)))
    return path


def test_killed_while_runs_commit_nothing_answered_is_lost(store_url, graph):
    agent = make_key(store_url, "crash-agent", "agent")
    reviewer = make_key(store_url, "crash-reviewer", "reviewer")
    answered: list[str] = []  # threads whose completion the server confirmed
    started: list[str] = []
    stop = threading.Event()

    def client(number: int, url: str) -> None:
        with (
            httpx.Client(base_url=url, headers={"x-api-key": agent}, timeout=30) as http,
            httpx.Client(base_url=url, headers={"x-api-key": reviewer}, timeout=30) as review,
        ):
            for cycle in range(1_000):
                if stop.is_set():
                    return
                thread_id = f"t-{number}-{cycle}"
                try:
                    started.append(thread_id)
                    interrupt_id = paused(http, thread_id)
                    done = review.post(
                        f"/approvals/{interrupt_id}/decision",
                        json={"decision": "approve", "reason": "ok"},
                    )
                except (httpx.HTTPError, KeyError):
                    return  # the server is gone
                if done.status_code == 200:
                    answered.append(thread_id)

    # Given four clients running refund cycles
    with serving(store_url, graph) as (server, url):
        clients = [threading.Thread(target=client, args=(n, url)) for n in range(4)]
        for thread in clients:
            thread.start()
        deadline = time.monotonic() + 60
        while len(answered) < 12 and time.monotonic() < deadline:
            time.sleep(0.05)
        # When the server is killed in the middle of it
        kill(server)
        stop.set()
        for thread in clients:
            thread.join(timeout=60)
    assert len(answered) >= 12

    # Then every confirmed decision is in the store, and every chain verifies
    with open_store(store_url) as store:
        for thread_id in answered:
            names = [type(event).__name__ for event in store.thread_events(thread_id)]
            assert "InterruptResumed" in names, thread_id
    assert_store_is_whole(store_url, started)
