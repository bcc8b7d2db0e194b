"""Which graphs `holdpoint serve` runs: --graph, holdpoint.toml, langgraph.json, the seeds."""

from __future__ import annotations

import json

import pytest

from api.graph_loader import (
    GraphLoadError,
    load_graphs,
    parse_graph_spec,
    read_config,
)
from domain.checkpoint.memory import InMemorySaver

GRAPH_FILE = """
from typing import TypedDict
from domain.graph import StateGraph, START, END
from domain.checkpoint.memory import InMemorySaver

class S(TypedDict):
    x: int

builder = StateGraph(S)
builder.add_node("inc", lambda s: {"x": s["x"] + 1})
builder.add_edge(START, "inc")
builder.add_edge("inc", END)
graph = builder.compile(checkpointer=InMemorySaver())

def make_graph():
    return builder

not_a_graph = 42
"""


@pytest.fixture
def graph_file(tmp_path):
    path = tmp_path / "agent.py"
    path.write_text(GRAPH_FILE)
    return path


def test_a_builder_a_compiled_graph_and_a_factory_are_compiled_on_the_servers_store(graph_file):
    store = InMemorySaver()
    sources = [
        parse_graph_spec(f"a={graph_file}:builder"),
        parse_graph_spec(f"b={graph_file}:graph"),
        parse_graph_spec(f"c={graph_file}:make_graph"),
    ]
    graphs = load_graphs(sources, store)
    assert sorted(graphs) == ["a", "b", "c"]
    for name, graph in graphs.items():
        assert graph.checkpointer is store
        assert graph.graph_id == name
        config = {"configurable": {"thread_id": f"t-{name}"}}
        assert graph.invoke({"x": 1}, config) == {"x": 2}


def test_without_graphs_the_seed_examples_are_served():
    graphs = load_graphs([], InMemorySaver())
    assert sorted(graphs) == ["content_review", "refund", "refund_approval"]


def test_langgraph_json_and_holdpoint_toml(tmp_path, graph_file):
    (tmp_path / "langgraph.json").write_text(
        json.dumps({"dependencies": ["."], "graphs": {"agent": "./agent.py:graph"}})
    )
    sources, server = read_config(tmp_path / "langgraph.json")
    assert [(s.name, s.path.name, s.attr) for s in sources] == [("agent", "agent.py", "graph")]
    assert server == {}
    (tmp_path / "holdpoint.toml").write_text(
        '[graphs]\nagent = "agent.py:builder"\n[server]\nport = 9000\n'
    )
    sources, server = read_config(tmp_path / "holdpoint.toml")
    assert sources[0].path == graph_file
    assert server == {"port": 9000}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no-equals", "must be NAME=path/to/file.py:attr"),
        ("bad name!=x.py:graph", "Graph name 'bad name!'"),
        ("a=x.py", "must be path/to/file.py:attr"),
        ("a=missing.py:graph", "no file"),
        ("a={file}:nothing", "has no attribute 'nothing'"),
        ("a={file}:not_a_graph", "is a builtins.int, not a Holdpoint StateGraph"),
    ],
)
def test_a_bad_graph_is_one_clear_error(graph_file, spec, message):
    with pytest.raises(GraphLoadError, match=message):
        load_graphs([parse_graph_spec(spec.format(file=graph_file))], InMemorySaver())


def test_a_module_that_fails_to_import_says_where(tmp_path):
    (tmp_path / "broken.py").write_text("raise RuntimeError('no')\n")
    with pytest.raises(GraphLoadError, match=r"importing .*broken.py failed: RuntimeError"):
        load_graphs([parse_graph_spec(f"x={tmp_path / 'broken.py'}:graph")], InMemorySaver())


def test_a_config_file_that_does_not_parse(tmp_path):
    (tmp_path / "holdpoint.toml").write_text("[graphs\n")
    with pytest.raises(GraphLoadError, match="is not valid toml"):
        read_config(tmp_path / "holdpoint.toml")
