"""An interrupt inside a subgraph that is a node of its parent (a compiled graph as a
node): the parent's state, the subgraph's state while it is paused, and the resume.

LangGraph's "Use subgraphs", section "View subgraph state", example "View interrupted
subgraph state" (docs.langchain.com/oss/python/langgraph/use-subgraphs): `subgraph_node_1`
asks `interrupt("Provide value:")`; the parent's `get_state` and `get_state(config,
subgraphs=True).tasks[0].state` are read while paused, then `Command(resume="bar")`.

Adapted: the outputs are printed by the harness rather than the program, and the state is
read once more after the resume (the subgraph's state is then gone from the task).
"""

from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from tests.saver.corpus import config, history, paused


class State(TypedDict):
    foo: str


def subgraph_node_1(state: State):
    value = interrupt("Provide value:")
    return {"foo": state["foo"] + value}


def run(checkpointer, pause):
    subgraph_builder = StateGraph(State)
    subgraph_builder.add_node(subgraph_node_1)
    subgraph_builder.add_edge(START, "subgraph_node_1")
    subgraph = subgraph_builder.compile()

    builder = StateGraph(State)
    builder.add_node("node_1", subgraph)
    builder.add_edge(START, "node_1")
    graph = builder.compile(checkpointer=checkpointer)

    thread = config("1")
    first = graph.invoke({"foo": ""}, thread)
    paused(pause, "1", first)
    parent_state = graph.get_state(thread)
    subgraph_state = graph.get_state(thread, subgraphs=True).tasks[0].state
    resumed = graph.invoke(Command(resume="bar"), thread)
    after = graph.get_state(thread, subgraphs=True)
    return [first, parent_state, subgraph_state, resumed, after, history(graph, thread)]
