"""`runs.cancel`, `runs.cancel_many` and `runs.delete` through the SDK, as useStream's stop
button and LangGraph's clients call them.

A run at work stops at its step's end, recorded (RunCancelled) with the key's principal;
`rollback` is refused, as it would delete events; a role that may neither run nor
cancel is refused and recorded. Deleting a run deletes its row, never its events."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from langgraph_sdk.errors import ConflictError, PermissionDeniedError, UnprocessableEntityError

from tests.api.http_harness import running_server
from tests.service.test_run_cancel import Gate, native_graph

GATE = Gate()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("store")
    url = f"sqlite:///{folder / 'holdpoint.db'}"
    with running_server(url, extra=lambda store: {"steps": native_graph(store, GATE)}) as s:
        yield s
    GATE.released.set()


def at_work(server) -> tuple[str, str]:
    """A thread whose run is at work in its `work` node."""
    GATE.entered.clear()
    GATE.released.clear()
    agent = server.sdk("agent")
    thread_id = agent.threads.create()["thread_id"]
    run = agent.runs.create(thread_id, "steps", input={"log": ""})
    assert GATE.entered.wait(10)
    return thread_id, run["run_id"]


def events(server, thread_id: str) -> list[dict[str, Any]]:
    with server.http("auditor") as auditor:
        return list(auditor.get(f"/threads/{thread_id}/events").json()["events"])


def test_the_stop_button_cancels_the_run_and_the_record_says_who(server):
    thread_id, run_id = at_work(server)
    agent = server.sdk("agent")
    # When the agent presses stop (useStream calls runs.cancel), and the node finishes
    agent.runs.cancel(thread_id, run_id)
    GATE.released.set()
    agent.runs.join(thread_id, run_id)
    # Then the run is interrupted, and the thread's record ends with who cancelled it
    assert agent.runs.get(thread_id, run_id)["status"] == "interrupted"
    last = events(server, thread_id)[-1]
    assert last["type"] == "RunCancelled"
    assert last["data"]["actor"]["id"] == "agent"
    assert agent.threads.get_state(thread_id)["next"] == ["last"]
    assert agent.threads.get(thread_id)["status"] == "idle"
    # And it cannot be cancelled again; its row can be deleted, its events stay
    with pytest.raises(ConflictError):
        agent.runs.cancel(thread_id, run_id)
    before = events(server, thread_id)
    agent.runs.delete(thread_id, run_id)
    assert [r["run_id"] for r in agent.runs.list(thread_id)] == []
    assert events(server, thread_id) == before


def test_rollback_and_a_role_that_may_not_cancel_are_refused(server):
    thread_id, run_id = at_work(server)
    try:
        with pytest.raises(UnprocessableEntityError, match="append-only"):
            server.sdk("agent").runs.cancel(thread_id, run_id, action="rollback")
        with pytest.raises(PermissionDeniedError):
            server.sdk("auditor").runs.cancel(thread_id, run_id)
        with pytest.raises(ConflictError):  # a run that has not ended is not deleted
            server.sdk("agent").runs.delete(thread_id, run_id)
        assert server.sdk("agent").runs.get(thread_id, run_id)["status"] == "running"
    finally:
        GATE.released.set()
    server.sdk("agent").runs.join(thread_id, run_id)
    assert server.sdk("agent").runs.get(thread_id, run_id)["status"] == "success"


def test_a_queued_run_cancelled_with_wait_is_answered_once_it_has_ended(server):
    thread_id, run_id = at_work(server)
    agent = server.sdk("agent")
    try:
        queued = agent.runs.create(thread_id, "steps", input=None, multitask_strategy="enqueue")
        assert queued["status"] == "pending"
        agent.runs.cancel(thread_id, queued["run_id"], wait=True)
        assert agent.runs.get(thread_id, queued["run_id"])["status"] == "interrupted"
    finally:
        GATE.released.set()
    agent.runs.join(thread_id, run_id)


def test_cancel_many_cancels_a_threads_runs(server):
    thread_id, run_id = at_work(server)
    reviewer = server.sdk("reviewer")
    reviewer.runs.cancel_many(thread_id=thread_id, status="running")
    GATE.released.set()
    server.sdk("agent").runs.join(thread_id, run_id)
    assert reviewer.runs.get(thread_id, run_id)["status"] == "interrupted"
    assert events(server, thread_id)[-1]["data"]["actor"]["id"] == "reviewer"
    with server.http("agent") as http:
        assert http.post("/runs/cancel", json={}).status_code == 422


def test_multitask_interrupt_stops_the_running_run_and_runs_the_new_one(server):
    thread_id, first = at_work(server)
    agent = server.sdk("agent")
    started: dict[str, Any] = {}

    def start() -> None:  # it waits for the thread, as LangGraph's server does not
        started.update(
            agent.runs.create(thread_id, "steps", input=None, multitask_strategy="interrupt")
        )

    starter = threading.Thread(target=start)
    starter.start()
    try:
        # Once the new run has asked the running one to stop, the node finishes
        deadline = time.monotonic() + 10
        while not server.services.runs.store.cancel_requests([first]):
            assert time.monotonic() < deadline, "the running run was never asked to stop"
    finally:
        GATE.released.set()
    starter.join(10)
    second = started["run_id"]
    assert agent.runs.join(thread_id, second) == {"log": "fwl"}
    assert agent.runs.get(thread_id, first)["status"] == "interrupted"
    (cancelled,) = [e for e in events(server, thread_id) if e["type"] == "RunCancelled"]
    assert second in cancelled["data"]["reason"]


def test_a_stream_dropped_with_on_disconnect_cancel_cancels_its_run(server):
    GATE.entered.clear()
    GATE.released.clear()
    agent = server.sdk("agent")
    thread_id = agent.threads.create()["thread_id"]
    body = {"assistant_id": "steps", "input": {"log": ""}, "on_disconnect": "cancel"}
    try:
        path = f"/threads/{thread_id}/runs/stream"
        with server.http("agent") as http, http.stream("POST", path, json=body) as stream:
            assert next(stream.iter_lines()) == "event: metadata"
            assert GATE.entered.wait(10)
        # the client has gone: its run is asked to stop
        deadline = time.monotonic() + 10
        while not any(b.cancel for b in server.services.runs.held_runs()):
            assert time.monotonic() < deadline, "the dropped stream's run was never cancelled"
    finally:
        GATE.released.set()
    (run,) = agent.runs.list(thread_id)
    agent.runs.join(thread_id, run["run_id"])
    assert agent.runs.get(thread_id, run["run_id"])["status"] == "interrupted"
    last = events(server, thread_id)[-1]
    assert (last["type"], last["data"]["reason"]) == ("RunCancelled", "its stream was dropped")
    assert last["data"]["actor"]["id"] == "agent"


def test_a_join_with_cancel_on_disconnect_needs_a_role_that_may_cancel(server):
    thread_id, run_id = at_work(server)
    try:
        with server.http("auditor") as http:
            refused = http.get(
                f"/threads/{thread_id}/runs/{run_id}/stream",
                params={"cancel_on_disconnect": "true"},
            )
        assert refused.status_code == 403
    finally:
        GATE.released.set()
    server.sdk("agent").runs.join(thread_id, run_id)
