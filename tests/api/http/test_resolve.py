"""Agent Inbox's "mark as resolved": `update_state(values=None, as_node="__end__")`.

LangGraph ends the thread where it stands, its pending tasks dropped. Holdpoint records
it as what it is at a hold point, a human stopping the thread: ThreadCancelled with the
actor and the reason, by a role that may cancel; the question leaves the queue."""

from __future__ import annotations

import pytest

from tests.api.http.test_langgraph_served import GRAPH, langgraph_graphs
from tests.api.http_harness import running_server

INPUTS = {"refund": {"refund_amount": 500.0}, GRAPH: {"amount": 500}}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("store")
    url = f"sqlite:///{folder / 'holdpoint.db'}"
    with running_server(url, extra=langgraph_graphs) as running:
        yield running


def paused_thread(server, graph: str = "refund") -> str:
    agent = server.sdk("agent")
    thread_id = agent.threads.create(graph_id=graph)["thread_id"]
    agent.runs.wait(thread_id, graph, input=INPUTS[graph])
    assert agent.threads.get(thread_id)["status"] == "interrupted"
    return thread_id


@pytest.mark.parametrize("graph", ["refund", GRAPH], ids=["native", "langgraph"])
def test_a_reviewer_marks_a_paused_thread_resolved(server, graph):
    thread_id = paused_thread(server, graph)
    reviewer = server.sdk("reviewer")
    # When the reviewer marks it resolved, as Agent Inbox does
    answer = reviewer.threads.update_state(thread_id, None, as_node="__end__")
    # Then it is stopped for good, its question withdrawn, and the record says who
    assert answer["checkpoint"]["thread_id"] == thread_id
    thread = reviewer.threads.get(thread_id)
    assert thread["status"] == "cancelled"
    assert thread["interrupts"] == {}
    with server.http("auditor") as auditor:
        events = auditor.get(f"/threads/{thread_id}/events").json()["events"]
        queue = auditor.get("/approvals", params={"limit": 500}).json()
    cancelled = events[-1]
    assert cancelled["type"] == "ThreadCancelled"
    assert cancelled["data"]["actor"]["id"] == "reviewer"
    assert cancelled["data"]["reason"] == "Marked as resolved (update_state as __end__)"
    assert [item for item in queue["data"] if item["thread_id"] == thread_id] == []


def test_an_agent_may_not_mark_a_thread_resolved(server):
    thread_id = paused_thread(server)
    before = server.event_count(thread_id)
    with server.http("agent") as agent:
        refused = agent.post(
            f"/threads/{thread_id}/state", json={"values": None, "as_node": "__end__"}
        )
    assert refused.status_code == 403
    assert "cancel threads" in refused.json()["detail"]
    assert server.event_count(thread_id) == before
    assert server.sdk("agent").threads.get(thread_id)["status"] == "interrupted"


def test_values_with_end_are_refused_and_nothing_is_recorded(server):
    thread_id = paused_thread(server)
    before = server.event_count(thread_id)
    with server.http("reviewer") as reviewer:
        refused = reviewer.post(
            f"/threads/{thread_id}/state",
            json={"values": {"approved": True}, "as_node": "__end__", "reason": "done"},
        )
    assert refused.status_code == 422
    assert "takes no values" in refused.json()["detail"]
    assert server.event_count(thread_id) == before
