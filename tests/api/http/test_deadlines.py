"""The server's own deadline worker: an overdue interrupt expires in the serving process.

In a module of its own: tests/api/http/test_approvals.py holds that worker back
for as long as its server runs.
"""

from __future__ import annotations

import time
from typing import Any, TypedDict
from uuid import uuid4

import pytest

from domain.record.thread import WorkflowThread
from domain.types import interrupt
from tests.api.http_harness import server_on
from tests.graphs import linear_graph


class Quick(TypedDict):
    answer: Any


def decide_soon(state: Quick) -> dict[str, Any]:
    return {"answer": interrupt("Answer within 50 ms", deadline=0.05)}


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_the_servers_own_deadline_worker_expires_an_overdue_interrupt(kind, tmp_path):
    # Given a server, and an interrupt with a 50 ms deadline raised on its store
    with server_on(kind, tmp_path) as server:
        graph = linear_graph(server.store, Quick, decide_soon, name="deadlined")
        thread_id = str(uuid4())
        graph.invoke({"answer": None}, {"configurable": {"thread_id": thread_id}})

        # When its deadline passes, then the server records the expiry (rejected by default)
        deadline = time.monotonic() + 30
        while not (expired := _expiries(server, thread_id)):
            assert time.monotonic() < deadline, "the server never expired the interrupt"
            time.sleep(0.01)
        assert [e.rule["decision"] for e in expired] == ["reject"]
        with server.http("reviewer") as reviewer:
            rows = reviewer.get("/approvals", params={"wait_for": server.head()}).json()["data"]
        assert thread_id not in [row["thread_id"] for row in rows]


def _expiries(server: Any, thread_id: str) -> list[Any]:
    events = server.store.thread_events(thread_id)
    return [e for e in events if isinstance(e, WorkflowThread.InterruptExpired)]
