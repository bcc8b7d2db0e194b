"""Streaming a graph with a subgraph with `subgraphs=True`: each chunk comes with the
namespace of the graph it comes from (`()` for the parent, `("node_2:<task id>",)` for
the subgraph), including the subgraph's interrupt and its resumed run.

LangGraph's "Use subgraphs", section "Stream subgraph outputs", extended example "Stream
from subgraphs" (docs.langchain.com/oss/python/langgraph/use-subgraphs): `node_1`, then
`node_2`, a subgraph with `subgraph_node_1` (a key of its own, `bar`) and
`subgraph_node_2`; `graph.stream({"foo": "foo"}, stream_mode="updates",
subgraphs=True)`.

Adapted: compiled with a checkpointer; a second thread runs a variant whose
`subgraph_node_2` asks for a suffix with `interrupt`, streamed with the "updates" and
"values" modes.
"""

from langgraph.graph.state import START, StateGraph
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from tests.saver.corpus import config, paused


class SubgraphState(TypedDict):
    foo: str
    bar: str


class ParentState(TypedDict):
    foo: str


def subgraph_node_1(state: SubgraphState):
    return {"bar": "bar"}


def subgraph_node_2(state: SubgraphState):
    # note that this node is using a state key ('bar') that is only available in the subgraph
    # and is sending update on the shared state key ('foo')
    return {"foo": state["foo"] + state["bar"]}


def asking_subgraph_node_2(state: SubgraphState):
    suffix = interrupt("Suffix?")
    return {"foo": state["foo"] + state["bar"] + suffix}


def node_1(state: ParentState):
    return {"foo": "hi! " + state["foo"]}


def build(checkpointer, second):
    subgraph_builder = StateGraph(SubgraphState)
    subgraph_builder.add_node(subgraph_node_1)
    subgraph_builder.add_node("subgraph_node_2", second)
    subgraph_builder.add_edge(START, "subgraph_node_1")
    subgraph_builder.add_edge("subgraph_node_1", "subgraph_node_2")
    subgraph = subgraph_builder.compile()

    builder = StateGraph(ParentState)
    builder.add_node("node_1", node_1)
    builder.add_node("node_2", subgraph)
    builder.add_edge(START, "node_1")
    builder.add_edge("node_1", "node_2")
    return builder.compile(checkpointer=checkpointer)


def run(checkpointer, pause):
    graph = build(checkpointer, subgraph_node_2)
    outputs = [
        list(graph.stream({"foo": "foo"}, config("1"), stream_mode="updates", subgraphs=True))
    ]
    graph = build(checkpointer, asking_subgraph_node_2)
    thread = config("2")
    chunks = list(
        graph.stream({"foo": "foo"}, thread, stream_mode=["updates", "values"], subgraphs=True)
    )
    paused(pause, "2", graph.get_state(thread))
    outputs.append(chunks)
    outputs.append(graph.get_state(thread, subgraphs=True))
    outputs.append(
        list(
            graph.stream(
                Command(resume="!"), thread, stream_mode=["updates", "values"], subgraphs=True
            )
        )
    )
    outputs.append(graph.get_state(thread, subgraphs=True))
    return outputs
