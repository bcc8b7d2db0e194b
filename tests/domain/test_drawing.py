"""A native graph's drawing (`domain.graph.drawing`), as LangGraph's `get_graph().to_json()`
gives one: given a builder, then its nodes and its edges, conditional ones marked."""

from __future__ import annotations

from typing import TypedDict

from domain.graph import END, START, StateGraph
from domain.graph.drawing import graph_json
from domain.types import Command


class S(TypedDict):
    n: int


def step(state: S) -> dict[str, int]:
    return {"n": state["n"] + 1}


def route(state: S) -> Command:
    return Command(goto="b")


def test_nodes_and_edges_plain_waiting_branching_and_routing_by_command():
    builder = StateGraph(S)
    builder.add_node("a", step)
    builder.add_node("b", step)
    builder.add_node("c", step)
    builder.add_node("go", route, destinations=("b", "c"))
    builder.add_edge(START, "a")
    builder.add_edge(["a", "b"], "c")
    builder.add_conditional_edges("a", lambda s: "b", {"b": "b", "done": END})
    builder.add_conditional_edges("c", lambda s: END)

    drawn = graph_json(builder)

    assert drawn["nodes"][0] == {"id": START, "type": "runnable", "data": {"name": START}}
    assert [n["id"] for n in drawn["nodes"]] == [START, "a", "b", "c", "go", END]
    assert drawn["nodes"][1] == {"id": "a", "type": "runnable", "data": {"name": "a"}}
    assert drawn["nodes"][-1] == {"id": END}
    edges = [(e["source"], e["target"], e.get("conditional", False)) for e in drawn["edges"]]
    assert edges == [
        (START, "a", False),
        ("a", "c", False),  # waiting edge: c waits for a and b
        ("b", "c", False),
        ("a", "b", True),  # the path map's targets
        ("a", END, True),
        ("c", "a", True),  # no path map: anywhere
        ("c", "b", True),
        ("c", "c", True),
        ("c", "go", True),
        ("c", END, True),
        ("go", "b", True),  # destinations of a node that routes by Command
        ("go", "c", True),
    ]
