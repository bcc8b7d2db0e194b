"""`after_seconds`, as LangGraph's server takes it: the run is queued, created that far in
the future, and taken by a worker no sooner; a run asked for meanwhile on the same thread
is not held up by it; a bad delay is a 422 recording nothing."""

from __future__ import annotations

import time
from datetime import datetime

import pytest

from tests.api.http_harness import running_server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("store")
    with running_server(f"sqlite:///{folder / 'h.db'}", run_poll_seconds=0.05) as running:
        yield running


def when(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def test_a_delayed_run_waits_in_the_queue_then_runs(server):
    agent = server.sdk("agent")
    thread_id = agent.threads.create()["thread_id"]
    asked = time.time()
    run = agent.runs.create(thread_id, "refund", input={"refund_amount": 5.0}, after_seconds=1)
    # Queued, created a second from now, and nothing recorded on the thread yet
    assert run["status"] == "pending"
    assert when(run["created_at"]) >= asked + 1 - 0.05
    assert agent.runs.get(thread_id, run["run_id"])["status"] == "pending"
    # Then it runs once its time has come, not before
    done = agent.runs.join(thread_id, run["run_id"])
    assert done["refund_amount"] == 5.0
    started = server.store.thread_events(thread_id)[0].timestamp.timestamp()
    assert started >= asked + 1 - 0.05


def test_a_run_asked_for_meanwhile_is_not_held_up_by_a_later_one(server):
    agent = server.sdk("agent")
    thread_id = agent.threads.create()["thread_id"]
    later = agent.runs.create(thread_id, "refund", input={"refund_amount": 1.0}, after_seconds=60)
    now = agent.runs.wait(thread_id, "refund", input={"refund_amount": 2.0})
    assert now["refund_amount"] == 2.0
    assert agent.runs.get(thread_id, later["run_id"])["status"] == "pending"
    agent.runs.cancel(thread_id, later["run_id"], wait=True)
    assert agent.runs.get(thread_id, later["run_id"])["status"] == "interrupted"


@pytest.mark.parametrize("delay", [-1, "soon", True, 10**9])
def test_a_delay_that_is_no_number_of_seconds_is_a_422_recording_nothing(server, delay):
    thread_id = server.sdk("agent").threads.create()["thread_id"]
    head = server.head()
    with server.http("agent") as http:
        refused = http.post(
            f"/threads/{thread_id}/runs",
            json={"assistant_id": "refund", "input": {"refund_amount": 1}, "after_seconds": delay},
        )
    assert refused.status_code == 422
    assert "after_seconds" in refused.json()["detail"]
    assert server.head() == head
