"""A graph invoked inside a node, as LangGraph programs do: given a parent run, when a
node invokes another graph, then what that graph's nodes see."""

from __future__ import annotations

from typing import Any, TypedDict

import langgraph.constants
import pytest

from domain import constants
from domain.checkpoint.memory import InMemorySaver
from domain.config import get_config
from domain.errors import MissingThreadIdError
from domain.graph import END, START, StateGraph


class State(TypedDict):
    seen: str


def a_graph(node: Any, checkpointer: Any = None) -> Any:
    builder = StateGraph(State)
    builder.add_node("node", node)
    builder.add_edge(START, "node")
    builder.add_edge("node", END)
    return builder.compile(checkpointer=checkpointer)


def child_node(state: State) -> dict[str, Any]:
    configurable = get_config()["configurable"]
    return {"seen": f"{configurable['thread_id']} as {configurable['actor']['id']}"}


def test_a_graph_without_a_checkpointer_invoked_in_a_node_sees_the_parents_thread():
    child = a_graph(child_node)
    parent = a_graph(lambda state: child.invoke({"seen": ""}), InMemorySaver())
    config = {"configurable": {"thread_id": "t-1", "actor": {"id": "amy", "role": "agent"}}}

    assert parent.invoke({"seen": ""}, config) == {"seen": "t-1 as amy"}


def test_its_own_config_comes_first():
    child = a_graph(child_node)
    parent = a_graph(
        lambda state: child.invoke({"seen": ""}, {"configurable": {"thread_id": "mine"}}),
        InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "t-1", "actor": {"id": "amy", "role": "agent"}}}

    assert parent.invoke({"seen": ""}, config) == {"seen": "mine as amy"}


def test_a_graph_with_a_checkpointer_of_its_own_still_names_its_own_thread():
    store = InMemorySaver()
    child = a_graph(child_node, store)
    parent = a_graph(lambda state: child.invoke({"seen": ""}), store)

    with pytest.raises(MissingThreadIdError):
        parent.invoke({"seen": ""}, {"configurable": {"thread_id": "t-1"}})


def test_the_constants_are_langgraphs():
    assert (constants.START, constants.END) == (langgraph.constants.START, langgraph.constants.END)
    assert constants.TAG_NOSTREAM == langgraph.constants.TAG_NOSTREAM
    assert constants.TAG_HIDDEN == langgraph.constants.TAG_HIDDEN
