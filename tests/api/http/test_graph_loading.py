"""Which graphs `holdpoint serve` runs: --graph, holdpoint.toml, langgraph.json, the seeds."""

from __future__ import annotations

import json
from typing import Any

import pytest

from domain.checkpoint.memory import InMemorySaver
from service.graph_loader import (
    GraphLoadError,
    load_graphs,
    parse_graph_spec,
    read_config,
)

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
        ("a={file}:not_a_graph", "is a builtins.int, not a graph: give a StateGraph"),
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


PAUSING_GRAPH = """
from typing import Any, TypedDict
from domain.graph import StateGraph, START, END
from domain.types import interrupt

class S(TypedDict):
    answer: Any

def ask(state):
    return {"answer": interrupt("ok?")}

builder = StateGraph(S)
builder.add_node("ask", ask)
builder.add_edge(START, "ask")
builder.add_edge("ask", END)
graph = builder.compile()
graph.step_timeout = 7.0
graph.set_interrupt_deadline(30, "approve")
"""


def raised_policy(graph, thread_id: str) -> tuple[Any, Any]:
    graph.invoke({"answer": None}, {"configurable": {"thread_id": thread_id}})
    events = graph.checkpointer.thread_events(thread_id)
    raised = next(e for e in events if type(e).__name__ == "InterruptRaised")
    return raised.due_by is not None, raised.on_expiry


def test_a_graph_table_gives_its_interrupts_a_default_deadline(tmp_path):
    # Given
    (tmp_path / "pausing.py").write_text(PAUSING_GRAPH)
    (tmp_path / "holdpoint.toml").write_text(
        '[graphs.review]\npath = "pausing.py:builder"\n'
        'interrupt_deadline = 3600\non_expiry = "escalate:lead"\n'
    )

    # When
    sources, _ = read_config(tmp_path / "holdpoint.toml")
    graph = load_graphs(sources, InMemorySaver())["review"]

    # Then
    assert raised_policy(graph, "t") == (
        True,
        {"action": "escalate", "role": "lead", "seconds": 3600},
    )


def test_a_compiled_graph_keeps_what_its_module_set_after_compile(tmp_path):
    # Given a module whose compiled graph has a step timeout and a default deadline
    (tmp_path / "pausing.py").write_text(PAUSING_GRAPH)

    # When the server compiles it again on its own store
    graph = load_graphs([parse_graph_spec(f"g={tmp_path / 'pausing.py'}:graph")], InMemorySaver())[
        "g"
    ]

    # Then
    assert graph.step_timeout == 7.0
    assert raised_policy(graph, "t")[1] == {
        "action": "decide",
        "decision": "approve",
        "resume": True,
        "seconds": 30,
    }


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("interrupt_deadline = 0", "interrupt_deadline must be a number of seconds above 0"),
        ('interrupt_deadline = "1h"', "interrupt_deadline must be a number of seconds above 0"),
        ('interrupt_deadline = 60\non_expiry = "later"', 'on_expiry must be "reject"'),
        ('on_expiry = "approve"', "has on_expiry but no interrupt_deadline"),
    ],
)
def test_a_bad_default_deadline_in_a_graph_table_is_refused(tmp_path, table, message):
    (tmp_path / "holdpoint.toml").write_text(f'[graphs.g]\npath = "g.py:graph"\n{table}\n')
    with pytest.raises(GraphLoadError, match=message):
        read_config(tmp_path / "holdpoint.toml")


def test_a_graph_table_sets_its_hold_points_policy(tmp_path):
    # Given
    (tmp_path / "pausing.py").write_text(PAUSING_GRAPH)
    (tmp_path / "holdpoint.toml").write_text(
        '[graphs.review]\npath = "pausing.py:builder"\n'
        "separation_of_duties = false\napprovals = 2\n"
    )

    # When
    sources, _ = read_config(tmp_path / "holdpoint.toml")
    graph = load_graphs(sources, InMemorySaver())["review"]

    # Then
    assert (graph.oversight.separation_of_duties, graph.oversight.approvals) == (False, 2)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('separation_of_duties = "no"', "separation_of_duties must be true or false"),
        ("approvals = 0", "approvals must be a whole number from 1 to 10"),
        ("approvals = 2.5", "approvals must be a whole number from 1 to 10"),
    ],
)
def test_a_bad_hold_points_policy_in_a_graph_table_is_refused(tmp_path, table, message):
    (tmp_path / "holdpoint.toml").write_text(f'[graphs.g]\npath = "g.py:graph"\n{table}\n')
    with pytest.raises(GraphLoadError, match=message):
        read_config(tmp_path / "holdpoint.toml")
