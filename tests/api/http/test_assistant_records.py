"""Assistants as configuration records, through the official SDK: created, updated in
versions, the latest chosen, deleted, each on record with who did it; a run by one gets
its configuration, and the thread records which assistant and version ran it."""

from __future__ import annotations

import uuid
from typing import Any, TypedDict

import httpx
import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from langgraph_sdk.errors import APIStatusError

from domain.assistants.assistant import assistant_uuid
from domain.record.thread import WorkflowThread
from service.assistant_ids import assistant_id as served_assistant_id
from service.langgraph_app import LangGraphApp
from tests.api.http_harness import running_server

GRAPH = "tiered"


class Ticket(TypedDict, total=False):
    tier: str
    approved: Any


def ask(state: Ticket) -> dict[str, Any]:
    return {"approved": interrupt({"question": "Refund?"})}


def settle(state: Ticket, config: RunnableConfig) -> dict[str, Any]:
    """What the run was configured with, as its assistant gave it."""
    return {"tier": config["configurable"].get("tier", "none")}


def tiered(store: Any) -> dict[str, Any]:
    builder = StateGraph(Ticket)
    builder.add_node("ask", ask)
    builder.add_node("settle", settle)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", "settle")
    builder.add_edge("settle", END)
    return {GRAPH: LangGraphApp(builder.compile(), GRAPH, store)}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("store")
    with running_server(f"sqlite:///{folder / 'holdpoint.db'}", extra=tiered) as running:
        yield running


def events(server, aggregate_id: uuid.UUID) -> list[Any]:
    return list(server.store.events.get(aggregate_id))


def paused_run(server, assistant: str, thread_id: str | None = None) -> tuple[str, str]:
    """A run by `assistant` to its interrupt: (thread id, interrupt id)."""
    agent = server.sdk("agent")
    thread_id = thread_id or agent.threads.create()["thread_id"]
    paused = agent.runs.wait(thread_id, assistant, input={})
    return thread_id, paused["__interrupt__"][0]["id"]


def test_an_assistant_is_made_changed_in_versions_and_chosen_on_record(server):
    agent = server.sdk("agent")
    made = agent.assistants.create(
        GRAPH, context={"tier": "gold"}, metadata={"team": "ops"}, name="Gold desk"
    )
    assert (made["version"], made["name"], made["graph_id"]) == (1, "Gold desk", GRAPH)
    assert made["config"] == {"configurable": {"tier": "gold"}}  # kept with the context

    updated = agent.assistants.update(
        made["assistant_id"], context={"tier": "platinum"}, metadata={"floor": 2}
    )
    assert updated["version"] == 2
    assert updated["metadata"] == {"team": "ops", "floor": 2}
    assert agent.assistants.get(made["assistant_id"]) == updated
    versions = agent.assistants.get_versions(made["assistant_id"])
    assert [(v["version"], v["context"]) for v in versions] == [
        (2, {"tier": "platinum"}),
        (1, {"tier": "gold"}),
    ]
    assert agent.assistants.get_versions(made["assistant_id"], metadata={"floor": 2}) == [
        versions[0]
    ]
    chosen = agent.assistants.set_latest(made["assistant_id"], 1)
    assert (chosen["version"], chosen["context"]) == (1, {"tier": "gold"})

    recorded = events(server, assistant_uuid(made["assistant_id"]))
    assert [type(e).__name__ for e in recorded] == [
        "AssistantCreated",
        "AssistantUpdated",
        "LatestVersionSelected",
    ]
    assert {e.actor["id"] for e in recorded} == {"agent"}


def test_search_and_count_list_the_recorded_beside_the_served(server):
    agent = server.sdk("agent")
    made = agent.assistants.create(GRAPH, name="Silver Desk", metadata={"region": {"eu": True}})
    of_graph = agent.assistants.search(graph_id=GRAPH, limit=100)
    assert made["assistant_id"] in {a["assistant_id"] for a in of_graph}
    assert served_assistant_id(GRAPH) in {a["assistant_id"] for a in of_graph}
    by_name = agent.assistants.search(name="silver", limit=100)  # a part, any case
    assert [a["assistant_id"] for a in by_name] == [made["assistant_id"]]
    nested = agent.assistants.search(metadata={"region": {"eu": True}})
    assert [a["assistant_id"] for a in nested] == [made["assistant_id"]]
    assert agent.assistants.count(graph_id=GRAPH) == len(of_graph)
    newest = agent.assistants.search(limit=1)  # as LangGraph's server: the newest first
    assert newest[0]["assistant_id"] == made["assistant_id"]


def test_a_run_gets_its_assistants_configuration_and_the_thread_records_the_version(server):
    agent = server.sdk("agent")
    made = agent.assistants.create(GRAPH, context={"tier": "gold"})
    mine = made["assistant_id"]
    thread_id, interrupt_id = paused_run(server, mine)
    thread = agent.threads.get(thread_id)
    assert (thread["metadata"]["assistant_id"], thread["metadata"]["assistant_version"]) == (
        mine,
        1,
    )

    agent.assistants.update(mine, context={"tier": "platinum"})
    reviewer = server.sdk("reviewer")
    done = reviewer.runs.wait(thread_id, mine, command={"resume": {interrupt_id: True}})
    assert done["tier"] == "platinum"  # the run by version 2 got version 2's configuration
    assert agent.threads.get(thread_id)["metadata"]["assistant_version"] == 2
    changed = [
        e
        for e in server.store.thread_events(thread_id)
        if isinstance(e, WorkflowThread.MetadataUpdated)
    ]
    assert [(e.metadata, e.actor["id"]) for e in changed] == [
        ({"assistant_id": mine, "assistant_version": 2}, "reviewer")
    ]
    history = agent.threads.get_history(thread_id)
    assert {h["metadata"]["assistant_id"] for h in history} == {mine}
    assert history[0]["metadata"]["assistant_version"] == 2


def test_a_run_by_the_served_graphs_own_assistant_takes_none_and_the_thread_says_so(server):
    agent = server.sdk("agent")
    mine = agent.assistants.create(GRAPH, context={"tier": "gold"})["assistant_id"]
    thread_id, interrupt_id = paused_run(server, mine)
    done = server.sdk("reviewer").runs.wait(
        thread_id, GRAPH, command={"resume": {interrupt_id: True}}
    )
    assert done["tier"] == "none"
    metadata = agent.threads.get(thread_id)["metadata"]
    assert metadata["assistant_id"] == served_assistant_id(GRAPH)
    assert "assistant_version" not in metadata
    (changed,) = [
        e
        for e in server.store.thread_events(thread_id)
        if isinstance(e, WorkflowThread.MetadataUpdated)
    ]
    assert changed.metadata == {"assistant_id": None, "assistant_version": None}


def test_a_decision_resumes_with_the_version_the_thread_began_with_even_once_deleted(server):
    agent = server.sdk("agent")
    mine = agent.assistants.create(GRAPH, context={"tier": "gold"})["assistant_id"]
    thread_id, interrupt_id = paused_run(server, mine)
    agent.assistants.update(mine, context={"tier": "platinum"})
    agent.assistants.delete(mine)

    with server.http("reviewer") as reviewer:
        decided = reviewer.post(f"/approvals/{interrupt_id}/decision", json={"decision": "approve"})
        assert decided.status_code == 200, decided.text
        run_id = decided.json()["run_id"]
        joined = reviewer.get(f"/threads/{thread_id}/runs/{run_id}/join").json()
    assert joined["tier"] == "gold"
    assert agent.threads.get(thread_id)["metadata"]["assistant_version"] == 1
    with pytest.raises(APIStatusError) as gone:
        agent.assistants.get(mine)
    assert gone.value.response.status_code == 404
    refused = httpx.post(
        f"{server.url}/threads/{thread_id}/runs",
        json={"assistant_id": mine, "input": {}},
        headers={"x-api-key": server.keys["agent"]},
    )
    assert refused.status_code == 422
    assert "Invalid assistant" in refused.json()["detail"]


def test_a_served_graphs_own_assistant_is_taken_up_on_record_when_changed(server):
    agent = server.sdk("agent")
    own = served_assistant_id("refund_approval")
    (first,) = agent.assistants.get_versions(own)
    assert first["metadata"] == {"created_by": "system"}
    changed = agent.assistants.update("refund_approval", metadata={"owner": "finance"})
    assert (changed["assistant_id"], changed["version"]) == (own, 2)
    assert changed["metadata"] == {"created_by": "system", "owner": "finance"}
    assert [v["version"] for v in agent.assistants.get_versions(own)] == [2, 1]
    # a native graph's thread records it too, from its first event
    thread_id = agent.threads.create()["thread_id"]
    agent.runs.wait(thread_id, "refund_approval", input={"refund_amount": 50})
    (started, *_) = server.store.thread_events(thread_id)
    assert started.metadata == {"assistant_id": own, "assistant_version": 2}


REFUSED = [
    ({"graph_id": "no-such-graph"}, 404, "not found"),
    ({"graph_id": GRAPH, "assistant_id": "my-desk"}, 422, "must be a UUID"),
    (
        {"graph_id": GRAPH, "config": {"configurable": {"a": 1}}, "context": {"b": 2}},
        422,
        "both configurable and context",
    ),
    ({"graph_id": GRAPH, "context": {"actor": {"id": "ada"}}}, 422, "each run's own"),
    ({"graph_id": GRAPH, "context": {"decision": "approve"}}, 422, "each run's own"),
    (
        {"graph_id": GRAPH, "config": {"configurable": {"__pregel_resume_map": {}}}},
        422,
        "the graph engine's own",
    ),
    ({"graph_id": GRAPH, "config": {"configurable": [1]}}, 422, "must be an object"),
    ({"graph_id": GRAPH, "colour": "red"}, 422, "body.colour"),
    ({"graph_id": GRAPH, "assistant_id": served_assistant_id(GRAPH)}, 409, "already exists"),
]


@pytest.mark.parametrize(("body", "status", "says"), REFUSED)
def test_an_assistant_that_cannot_be_made_is_refused_and_nothing_is_recorded(
    server, body, status, says
):
    head = server.head()
    with server.http("agent") as agent:
        refused = agent.post("/assistants", json=body)
    assert refused.status_code == status
    assert says in refused.json()["detail"]
    assert server.head() == head


def test_who_may_change_assistants_and_what_may_not_be_deleted(server):
    with server.http("reviewer") as reviewer:
        assert reviewer.post("/assistants", json={"graph_id": GRAPH}).status_code == 403
    with server.http("agent") as agent:
        served = agent.delete(f"/assistants/{served_assistant_id(GRAPH)}")
        made = agent.post("/assistants", json={"graph_id": GRAPH}).json()
        with_threads = agent.delete(f"/assistants/{made['assistant_id']}?delete_threads=true")
        again = agent.post(
            "/assistants",
            json={
                "graph_id": GRAPH,
                "assistant_id": served_assistant_id(GRAPH),
                "if_exists": "do_nothing",
            },
        )
        unknown_version = agent.post(
            f"/assistants/{made['assistant_id']}/latest", json={"version": 7}
        )
    assert served.status_code == 422
    assert "served" in served.json()["detail"]
    assert with_threads.status_code == 422
    assert "append-only" in with_threads.json()["detail"]
    assert again.status_code == 200
    assert again.json()["assistant_id"] == served_assistant_id(GRAPH)
    assert unknown_version.status_code == 404
    assert "versions 1" in unknown_version.json()["detail"]
