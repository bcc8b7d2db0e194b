"""Assistants, one per served graph: searched, sorted, selected and counted through the
SDK as LangGraph's server answers."""

from __future__ import annotations

from typing import Any, TypedDict

import pytest
from langgraph.graph import START, StateGraph

from service.langgraph_app import LangGraphApp
from tests.api.http_harness import running_server
from tests.saver.langgraph_graphs import refund_builder


class Outer(TypedDict):
    amount: int


def nested_builder() -> StateGraph[Outer]:
    """A LangGraph graph whose node is the refund graph, compiled: a subgraph."""
    builder = StateGraph(Outer)
    builder.add_node("refund", refund_builder().compile())
    builder.add_edge(START, "refund")
    return builder


def served_langgraph(store: Any) -> dict[str, Any]:
    return {
        "refund-lg": LangGraphApp(refund_builder().compile(), "refund-lg", store),
        "nested-lg": LangGraphApp(nested_builder().compile(), "nested-lg", store),
    }


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("store")
    url = f"sqlite:///{folder / 'holdpoint.db'}"
    with running_server(url, extra=served_langgraph) as running:
        yield running


def test_assistants_are_sorted_as_asked_and_paged(server):
    agent = server.sdk("agent")
    names = sorted(server.services.graphs)
    everyone = agent.assistants.search(limit=1000)
    assert [a["graph_id"] for a in everyone] == names
    descending = agent.assistants.search(limit=1000, sort_by="name", sort_order="desc")
    assert [a["name"] for a in descending] == names[::-1]
    second = agent.assistants.search(limit=1, offset=1, sort_by="assistant_id", sort_order="asc")
    assert second == sorted(everyone, key=lambda a: a["assistant_id"])[1:2]


def test_select_answers_with_the_fields_asked_for_and_count_counts(server):
    agent = server.sdk("agent")
    picked = agent.assistants.search(graph_id="refund", select=["graph_id", "version"])
    assert picked == [{"graph_id": "refund", "version": 1}]
    assert agent.assistants.count() == len(server.services.graphs)
    assert agent.assistants.count(graph_id="refund") == 1
    assert agent.assistants.count(graph_id="no-such-graph") == 0
    with server.http("agent") as http:
        assert http.post("/assistants/search", json={"select": ["secret"]}).status_code == 422
        assert http.post("/assistants/search", json={"sort_by": "size"}).status_code == 422


def test_a_native_graph_is_drawn_with_its_nodes_and_edges(server):
    agent = server.sdk("agent")
    drawn = agent.assistants.get_graph("refund_approval")
    builder = server.services.graphs["refund_approval"].builder
    assert [n["id"] for n in drawn["nodes"]] == ["__start__", *builder.nodes, "__end__"]
    plain = {(e["source"], e["target"]) for e in drawn["edges"] if not e.get("conditional")}
    assert plain == set(builder.edges)


def drawn_by_langgraph(graph: Any, xray: bool = False) -> dict[str, Any]:
    """LangGraph's drawing, as LangGraph's server answers it: a node's data is its name."""
    drawn = graph.get_graph(xray=xray).to_json()
    for node in drawn["nodes"]:
        if isinstance(node.get("data"), dict):
            node["data"] = {"name": node["data"]["name"]}
    return dict(drawn)


def test_a_langgraph_graph_is_drawn_as_langgraph_draws_it(server):
    agent = server.sdk("agent")
    expected = drawn_by_langgraph(refund_builder().compile())
    assert agent.assistants.get_graph("refund-lg") == expected
    nested = drawn_by_langgraph(nested_builder().compile(), xray=True)
    assert agent.assistants.get_graph("nested-lg", xray=True) == nested


def test_schemas_of_both_engines_and_subgraphs_of_langgraph_graphs(server):
    agent = server.sdk("agent")
    native = agent.assistants.get_schemas("refund_approval")
    assert native["graph_id"] == "refund_approval"
    assert set(native["state_schema"]["properties"]) == {"refund_amount", "approved"}
    assert native["input_schema"] == native["state_schema"]
    lg = agent.assistants.get_schemas("refund-lg")
    assert set(lg["input_schema"]["properties"]) == {"amount", "log"}
    assert lg["output_schema"] == lg["state_schema"]
    assert agent.assistants.get_subgraphs("refund_approval") == {}
    assert agent.assistants.get_subgraphs("refund-lg") == {}
    nested = agent.assistants.get_subgraphs("nested-lg")
    assert list(nested) == ["refund"]
    assert nested["refund"]["input_schema"] == lg["input_schema"]
    with server.http("agent") as http:
        assert http.get("/assistants/no-such-graph/graph").status_code == 404
        assert http.get("/assistants/no-such-graph/schemas").status_code == 404


def test_a_served_graphs_own_assistant_has_one_version_until_changed(server):
    agent = server.sdk("agent")
    (version,) = agent.assistants.get_versions("refund")
    assert (version["graph_id"], version["version"]) == ("refund", 1)
    assert agent.assistants.set_latest("refund", 1)["version"] == 1
    with server.http("agent") as http:
        assert http.post("/assistants/refund/latest", json={"version": 2}).status_code == 404
        assert http.delete("/assistants/no-such-graph").status_code == 404
