"""Real LangGraph graphs named to `holdpoint serve` (--graph, langgraph.json): given a
module with each kind LangGraph's own server takes, when the server loads it, then each
is served on HoldpointSaver over the server's store, its threads recorded there."""

from __future__ import annotations

import json

import pytest

from domain.checkpoint.memory import InMemorySaver
from service.graph_loader import load_graphs, parse_graph_spec, read_config
from service.langgraph_app import LangGraphApp

LANGGRAPH_FILE = """
import warnings
from typing import TypedDict
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.func import entrypoint
from langgraph.graph import START, StateGraph
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

class S(TypedDict):
    x: int

builder = StateGraph(S)
builder.add_node("inc", lambda s: {"x": s["x"] + 1})
builder.add_edge(START, "inc")
graph = builder.compile(checkpointer=InMemorySaver())  # the server's saver takes its place

def make_graph():
    return builder.compile()

@entrypoint()
def double(x: dict) -> dict:
    return {"x": x["x"] * 2}

class Model(GenericFakeChatModel):
    def bind_tools(self, tools, **_):
        return self

agent = create_agent(Model(messages=iter([AIMessage("hi")])), tools=[])

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent
    react = create_react_agent(Model(messages=iter([AIMessage("hi")])), tools=[])
"""
KINDS = {
    "builder": "builder",
    "compiled": "graph",
    "factory": "make_graph",
    "entrypoint": "double",
    "agent": "agent",
    "react": "react",
}


@pytest.fixture
def graph_file(tmp_path):
    path = tmp_path / "lg_app.py"
    path.write_text(LANGGRAPH_FILE)
    return path


def test_each_kind_of_langgraph_graph_is_served_on_holdpoint_saver(graph_file):
    store = InMemorySaver()
    sources = [parse_graph_spec(f"{name}={graph_file}:{attr}") for name, attr in KINDS.items()]

    graphs = load_graphs(sources, store)

    assert sorted(graphs) == sorted(KINDS)
    for name, app in graphs.items():
        assert isinstance(app, LangGraphApp)
        assert app.graph_id == name
        assert app.saver.store is store
        assert app.graph.checkpointer is app.saver
    config = {"configurable": {"thread_id": "t-compiled"}}
    assert graphs["compiled"].graph.invoke({"x": 1}, config) == {"x": 2}
    assert graphs["entrypoint"].graph.invoke({"x": 2}, {"configurable": {"thread_id": "t-e"}}) == {
        "x": 4
    }
    assert [e.graph_id for e in store.thread_events("t-compiled")[:1]] == ["compiled"]
    assert store.verify_chain("t-e").ok


def test_a_langgraph_json_names_langgraph_graphs(graph_file, tmp_path):
    config_file = tmp_path / "langgraph.json"
    config_file.write_text(
        json.dumps({"graphs": {"agent": f"./{graph_file.name}:agent", "app": "./lg_app.py:graph"}})
    )

    sources, _ = read_config(config_file)
    graphs = load_graphs(sources, InMemorySaver())

    assert sorted(graphs) == ["agent", "app"]
    assert all(isinstance(app, LangGraphApp) for app in graphs.values())
