"""`threads.copy`: a fork at the thread's head, on record with its lineage.

LangGraph's server copies a thread's checkpoints to a new thread. Holdpoint records a
new thread whose first event, ThreadForked, names the source, its version and its hash;
a copy of a paused thread asks its question again, as a fork does. A real LangGraph
graph's thread is not copied yet: a fork carries the native engine's state, and the copy
of a paused one took a decision and then could not resume (UnknownInterruptError)."""

from __future__ import annotations

import pytest

from tests.api.http.test_langgraph_served import GRAPH, langgraph_graphs
from tests.api.http_harness import running_server

INPUTS = {"refund": {"refund_amount": 500.0}, GRAPH: {"amount": 500}}


@pytest.fixture
def server(tmp_path):
    url = f"sqlite:///{tmp_path / 'holdpoint.db'}"
    with running_server(url, extra=langgraph_graphs) as running:
        yield running


def test_a_copy_is_a_fork_at_the_head_with_its_lineage(server):
    graph = "refund"
    agent = server.sdk("agent")
    source = agent.threads.create(graph_id=graph)["thread_id"]
    agent.runs.wait(source, graph, input=INPUTS[graph])
    # When the agent copies the paused thread (the SDK's call; its answer is the copy)
    agent.threads.copy(source)
    with server.http("agent") as http:
        copied = http.post(f"/threads/{source}/copy").json()
    # Then each copy is a new thread with the source's values, asking the question again
    assert copied["thread_id"] != source
    assert len({t["thread_id"] for t in agent.threads.search(limit=100)}) == 3
    assert agent.threads.get_state(copied["thread_id"])["values"] == INPUTS[graph]
    assert copied["status"] == "interrupted"
    with server.http("auditor") as auditor:
        events = auditor.get(f"/threads/{copied['thread_id']}/events").json()["events"]
        source_events = auditor.get(f"/threads/{source}/events").json()["events"]
    forked = events[0]
    assert forked["type"] == "ThreadForked"
    assert forked["data"]["source_thread_id"] == source
    assert forked["data"]["source_version"] == len(source_events)
    assert forked["data"]["actor"]["id"] == "agent"


def test_a_real_langgraph_graphs_thread_is_not_copied_and_nothing_is_written(server):
    # Given a real LangGraph graph's thread, paused at its question
    agent = server.sdk("agent")
    source = agent.threads.create(graph_id=GRAPH)["thread_id"]
    agent.runs.wait(source, GRAPH, input=INPUTS[GRAPH])
    head = server.services.store.recorder.max_notification_id()

    # When the agent asks for a copy
    with server.http("agent") as http:
        answer = http.post(f"/threads/{source}/copy")

    # Then it is refused, saying why and what works instead, and nothing is written
    assert answer.status_code == 409
    problem = answer.json()
    assert problem["type"].endswith("/fork-not-supported")
    assert "ran a real LangGraph graph: it cannot be copied or forked" in problem["detail"]
    assert "a run or a state update from one of its checkpoints" in problem["detail"]
    assert server.services.store.recorder.max_notification_id() == head
    assert len(agent.threads.search(limit=100)) == 1


def test_a_thread_never_run_or_unknown_cannot_be_copied(server):
    agent = server.sdk("agent")
    reserved = agent.threads.create()["thread_id"]
    with server.http("agent") as http:
        assert http.post(f"/threads/{reserved}/copy").status_code == 409
        assert http.post("/threads/no-such-thread/copy").status_code == 404
    with server.http("auditor") as http:
        assert http.post(f"/threads/{reserved}/copy").status_code == 403
