"""`threads.copy`: a fork at the thread's head, on record with its lineage.

LangGraph's server copies a thread's checkpoints to a new thread. Holdpoint records a
new thread whose first event, ThreadForked, names the source, its version and its hash;
a copy of a paused thread asks its question again, as a fork does. A real LangGraph
graph's thread is copied with its checkpoints (every one reads the same on the copy),
only at rest: a paused one's copy would ask the source's question under its id. A
stopped (cancelled) thread is not copied: the copy would run on where the stop stopped
it."""

from __future__ import annotations

import pytest

from domain.access.keyring import Keyring
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


def test_a_real_langgraph_graphs_paused_thread_is_not_copied_and_nothing_is_written(server):
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
    assert "ran a real LangGraph graph and was interrupted at version" in problem["detail"]
    assert "decide it first" in problem["detail"]
    assert server.services.store.recorder.max_notification_id() == head
    assert len(agent.threads.search(limit=100)) == 1


def paid_langgraph_thread(server) -> str:  # type: ignore[no-untyped-def]
    agent = server.sdk("agent")
    source = str(agent.threads.create(graph_id=GRAPH)["thread_id"])
    agent.runs.wait(source, GRAPH, input=INPUTS[GRAPH])
    server.sdk("reviewer").runs.wait(source, GRAPH, command={"resume": True})
    return source


def test_a_real_langgraph_graphs_thread_at_rest_is_copied_with_its_checkpoints(server):
    # Given a real LangGraph graph's refund, approved and paid
    source = paid_langgraph_thread(server)
    agent = server.sdk("agent")
    source_events = server.services.store.thread_events(source)

    # When the agent copies it (the official SDK's call)
    copied = agent.threads.copy(source)["thread_id"]

    # Then the copy has the source's state and every checkpoint of its history, and its
    # record starts with ThreadForked naming the source
    assert agent.threads.get_state(copied)["values"] == agent.threads.get_state(source)["values"]
    ids = [h["checkpoint_id"] for h in agent.threads.get_history(source)]
    assert [h["checkpoint_id"] for h in agent.threads.get_history(copied)] == ids
    [forked] = server.services.store.thread_events(copied)
    assert (forked.source_thread_id, forked.engine) == (source, "langgraph")
    idle = [t["thread_id"] for t in agent.threads.search(status="idle", limit=100)]
    assert copied in idle

    # And it goes on by itself: a new refund pauses at its own question, in the queue
    # under the copy, and the reviewer's decision pays it there; the source is untouched
    output = agent.runs.wait(copied, GRAPH, input={"amount": 40})
    with server.http("reviewer") as reviewer:
        [item] = reviewer.get("/approvals").json()["data"]
        assert (item["thread_id"], item["payload"]["amount"]) == (copied, 40)
        decided = reviewer.post(
            f"/approvals/{output['__interrupt__'][0]['id']}/decision", json={"decision": "approve"}
        )
        assert decided.status_code == 200, decided.text
        joined = reviewer.get(f"/threads/{copied}/runs/{decided.json()['run_id']}/join").json()
    assert joined["log"][-1] == "paid 40"
    assert server.services.store.thread_events(source) == source_events


def test_a_copy_runs_on_from_its_sources_decision_only_for_who_may_decide_it(server):
    # Given a copy of a paid refund, and the checkpoint (the source's) between the
    # reviewer's answer and the payment
    source = paid_langgraph_thread(server)
    copied = server.sdk("agent").threads.copy(source)["thread_id"]
    history = server.sdk("agent").threads.get_history(copied)
    past_the_answer = next(h for h in history if h["next"] == ["pay"])["checkpoint_id"]

    # When the agent runs the copy on from there (it would pay again under that answer)
    with server.http("agent") as agent:
        again = agent.post(
            f"/threads/{copied}/runs/wait",
            json={"assistant_id": GRAPH, "input": None, "checkpoint_id": past_the_answer},
        )

    # Then it is refused, as on the source, and nothing ran
    assert again.status_code == 403, again.text
    assert "a fork there would run under that decision" in again.json()["detail"]
    assert server.services.store.thread_events(copied)[1:] == []


def test_a_thread_never_run_or_unknown_cannot_be_copied(server):
    agent = server.sdk("agent")
    reserved = agent.threads.create()["thread_id"]
    with server.http("agent") as http:
        assert http.post(f"/threads/{reserved}/copy").status_code == 409
        assert http.post("/threads/no-such-thread/copy").status_code == 404
    with server.http("auditor") as http:
        assert http.post(f"/threads/{reserved}/copy").status_code == 403


def test_who_copied_a_real_langgraph_graphs_thread_may_not_decide_its_questions(server):
    # Given a paid refund that an admin copied, and a new refund the agent ran on the copy
    source = paid_langgraph_thread(server)
    with server.http("admin") as admin:
        copied = admin.post(f"/threads/{source}/copy").json()["thread_id"]
    output = server.sdk("agent").runs.wait(copied, GRAPH, input={"amount": 40})
    interrupt_id = output["__interrupt__"][0]["id"]

    # When the admin who copied it decides its question, then it is refused (separation
    # of duties: the copier shaped the thread), on record; a reviewer may
    with server.http("admin") as admin:
        refused = admin.post(f"/approvals/{interrupt_id}/decision", json={"decision": "approve"})
    assert refused.status_code == 403, refused.text
    assert "separation of duties" in refused.json()["detail"]
    last = Keyring(server.services.store).refusals()[-1]
    assert (last.principal_id, last.reason) == ("admin", "separation_of_duties")
    with server.http("reviewer") as reviewer:
        decided = reviewer.post(f"/approvals/{interrupt_id}/decision", json={"decision": "approve"})
    assert decided.status_code == 200, decided.text


@pytest.mark.parametrize("graph", ["refund", GRAPH])
def test_a_stopped_thread_is_not_copied_and_nothing_is_written(server, graph):
    # Given a thread paused at its question, then stopped (the stop button)
    agent = server.sdk("agent")
    source = agent.threads.create(graph_id=graph)["thread_id"]
    agent.runs.wait(source, graph, input=INPUTS[graph])
    with server.http("admin") as admin:
        assert admin.post(f"/threads/{source}/cancel", json={"reason": "Fraud"}).is_success
    before = len(agent.threads.search(limit=100))

    # When the agent copies it, to run on where the stop stopped it
    with server.http("agent") as http:
        copied = http.post(f"/threads/{source}/copy")

    # Then a 409, and no copy
    assert copied.status_code == 409, copied.text
    assert copied.json()["type"].endswith("/thread-cancelled")
    assert len(agent.threads.search(limit=100)) == before
