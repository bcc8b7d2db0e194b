"""Interrupts two levels down: a parent graph whose node is a subgraph whose node is
another subgraph, which asks twice; the parent's `get_state(subgraphs=True)` shows each
level's state while paused, `stream(subgraphs=True)` each level's updates, and resuming
twice finishes all three.

LangGraph's "Use subgraphs" (docs.langchain.com/oss/python/langgraph/use-subgraphs),
sections "Add persistence" ("You only need to provide the checkpointer when compiling
the parent graph. LangGraph will automatically propagate the checkpointer to the child
subgraphs"), "View subgraph state" (`subgraph_node_1` asking `interrupt("Provide
value:")`, `graph.get_state(config, subgraphs=True).tasks[0].state`) and "Stream
subgraph outputs".

Adapted: the subgraph of "View subgraph state" is nested in a middle subgraph with a node
of its own before it, and asks a second question after the first.
"""

from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from tests.saver.corpus import config, history, paused


class State(TypedDict):
    foo: str


def subgraph_node_1(state: State):
    value = interrupt("Provide value:")
    more = interrupt(f"Provide another value after {value!r}:")
    return {"foo": state["foo"] + value + more}


def middle_node(state: State):
    return {"foo": state["foo"] + "[middle]"}


def run(checkpointer, pause):
    inner_builder = StateGraph(State)
    inner_builder.add_node(subgraph_node_1)
    inner_builder.add_edge(START, "subgraph_node_1")
    inner = inner_builder.compile()

    middle_builder = StateGraph(State)
    middle_builder.add_node(middle_node)
    middle_builder.add_node("inner", inner)
    middle_builder.add_edge(START, "middle_node")
    middle_builder.add_edge("middle_node", "inner")
    middle = middle_builder.compile()

    builder = StateGraph(State)
    builder.add_node("node_1", middle)
    builder.add_edge(START, "node_1")
    graph = builder.compile(checkpointer=checkpointer)

    thread = config("1")
    outputs = []
    chunks = list(graph.stream({"foo": ""}, thread, subgraphs=True))
    paused(pause, "1", chunks)
    outputs.extend([chunks, graph.get_state(thread, subgraphs=True)])
    chunks = list(graph.stream(Command(resume="bar"), thread, subgraphs=True))
    paused(pause, "1", chunks)
    outputs.extend([chunks, graph.get_state(thread, subgraphs=True)])
    outputs.append(list(graph.stream(Command(resume="baz"), thread, subgraphs=True)))
    outputs.extend([graph.get_state(thread, subgraphs=True), history(graph, thread)])
    return outputs
