"""Streaming a served real LangGraph graph: given `holdpoint serve` with a LangGraph chat
graph, when the official SDK streams a run in each mode LangGraph's server offers, then
each mode's events come as LangGraph's server names and shapes them."""

from __future__ import annotations

from typing import Any

import pytest

from service.langgraph_app import LangGraphApp
from tests.api.http_harness import Server, running_server
from tests.saver.langgraph_graphs import chat_builder

GRAPH = "chat-lg"
HELLO = {"messages": [{"type": "human", "content": "hi", "id": "h-1"}]}


@pytest.fixture
def server(tmp_path):
    def graphs(store: Any) -> dict[str, Any]:
        return {GRAPH: LangGraphApp(chat_builder().compile(), GRAPH, store)}

    with running_server(f"sqlite:///{tmp_path / 'h.db'}", extra=graphs) as started:
        yield started


def streamed(server: Server, thread_id: str, **options: Any) -> list[Any]:
    client = server.sdk("agent")
    client.threads.create(thread_id=thread_id, metadata={"graph_id": GRAPH})
    return list(client.runs.stream(thread_id, GRAPH, input=HELLO, **options))


def events_of(parts: list[Any]) -> list[str]:
    return [part.event for part in parts]


def test_values_and_updates_stream_the_state_and_each_nodes_update(server):
    parts = streamed(server, "t1", stream_mode=["values", "updates"])

    values = [p.data for p in parts if p.event == "values"]
    updates = [p.data for p in parts if p.event == "updates"]
    assert [m["content"] for m in values[-1]["messages"]] == ["hi", "hello there", "turn 2"]
    assert values[-1]["messages"][1]["type"] == "ai"
    assert [list(update) for update in updates] == [["reply"], ["counter"]]


def test_custom_streams_what_a_node_writes(server):
    parts = streamed(server, "t2", stream_mode="custom")

    assert [p.data for p in parts if p.event == "custom"] == [{"progress": "replying"}]


def test_messages_tuple_streams_each_message_with_its_metadata(server):
    parts = streamed(server, "t3", stream_mode="messages-tuple")

    tuples = [p.data for p in parts if p.event == "messages"]
    assert tuples, events_of(parts)
    message, metadata = tuples[0]
    assert message["type"].startswith("AIMessage") or message["type"] == "ai"
    assert metadata["langgraph_node"] == "reply"


def test_the_servers_messages_mode_sends_metadata_then_the_message_so_far(server):
    parts = streamed(server, "t4", stream_mode="messages")

    kinds = events_of(parts)
    assert kinds.count("messages/metadata") == 2  # the reply, and the subgraph's count
    partial = [p.data[0]["content"] for p in parts if p.event == "messages/partial"]
    assert partial == ["hello", "hello ", "hello there"]  # the reply so far, token by token
    complete = [p.data[0]["content"] for p in parts if p.event == "messages/complete"]
    assert complete == ["turn 2"]  # a message that came whole


@pytest.mark.parametrize("mode", ["debug", "tasks", "checkpoints"])
def test_langgraphs_other_modes_stream_as_they_do_in_langgraph(server, mode):
    parts = streamed(server, f"t-{mode}", stream_mode=mode)

    assert [p for p in parts if p.event == mode], events_of(parts)


def test_subgraphs_stream_under_their_namespace(server):
    parts = streamed(server, "t5", stream_mode="updates", stream_subgraphs=True)

    names = events_of(parts)
    assert "updates" in names
    assert any(name.startswith("updates|counter:") for name in names), names


def test_events_stream_langchains_events(server):
    parts = streamed(server, "t6", stream_mode="events")

    kinds = {p.data["event"] for p in parts if p.event == "events"}
    assert {"on_chain_start", "on_chain_end", "on_chat_model_end"} <= kinds


def test_a_mode_the_native_engine_does_not_stream_is_refused_for_a_native_graph(server):
    client = server.sdk("agent")
    with server.http("agent") as agent:
        answer = agent.post(
            "/runs/stream", json={"assistant_id": "refund", "input": {}, "stream_mode": "custom"}
        )

    assert answer.status_code == 422
    assert "not supported by the native engine" in answer.json()["detail"]
    del client
