"""Bypassing a reducer with `Overwrite`: a node's `Overwrite(value=[...])` replaces a
list that `operator.add` otherwise extends, and so does an `update_state` with it; the
checkpoints record the replaced values.

LangGraph's reference for `langgraph.types.Overwrite` (reference.langchain.com/python/
langgraph/types/Overwrite: `node_a` returns `{"messages": ["a"]}`, `node_b` returns
`{"messages": Overwrite(value=["b"])}`) and "Graph API" overview, section "Overwrite"
("In some cases, you may want to bypass a reducer and directly overwrite a state value")
(docs.langchain.com/oss/python/langgraph/graph-api).

Adapted: compiled with a checkpointer; a static breakpoint before `node_b`
(`interrupt_before`) shows the state between the two updates; the state is then
overwritten once more by hand (`update_state`, `as_node="node_b"`).
"""

import operator
from typing import Annotated

from langgraph.graph import END, START, StateGraph
from langgraph.types import Overwrite
from typing_extensions import TypedDict

from tests.saver.corpus import config, history


class State(TypedDict):
    messages: Annotated[list, operator.add]


def node_a(state: State):
    # Normal update: uses the reducer (operator.add)
    return {"messages": ["a"]}


def node_b(state: State):
    # Overwrite: bypasses the reducer and replaces the entire value
    return {"messages": Overwrite(value=["b"])}


def run(checkpointer, pause):
    builder = StateGraph(State)
    builder.add_node("node_a", node_a)
    builder.add_node("node_b", node_b)
    builder.add_edge(START, "node_a")
    builder.add_edge("node_a", "node_b")
    builder.add_edge("node_b", END)
    graph = builder.compile(checkpointer=checkpointer, interrupt_before=["node_b"])

    thread = config("overwrite")
    outputs = [graph.invoke({"messages": ["start"]}, thread), graph.get_state(thread)]
    outputs.append(list(graph.stream(None, thread, stream_mode=["updates", "values"])))
    outputs.append(
        graph.update_state(thread, {"messages": Overwrite(value=["by hand"])}, as_node="node_b")
    )
    outputs.append(graph.update_state(thread, {"messages": ["appended"]}, as_node="node_b"))
    outputs.extend([graph.get_state(thread), history(graph, thread)])
    return outputs
