"""A node inside a subgraph routes to a node of its parent graph with
`Command(goto=..., update=..., graph=Command.PARENT)`; the parent's key has a reducer,
as the docs require for an update sent to the parent.

LangGraph's "Use the graph API", section "Navigate to a node in a parent graph"
(docs.langchain.com/oss/python/langgraph/use-graph-api): `State.foo` is `Annotated[str,
operator.add]`, `node_a` is a single-node subgraph returning `Command(update={"foo":
value}, goto=goto, graph=Command.PARENT)`, `node_b`/`node_c` are nodes of the parent.

Adapted: `node_a` chooses from its input instead of `random.choice`; the graph is
compiled with a checkpointer; both branches run; a third thread has the subgraph ask a
human (`interrupt`) before it routes, so the jump out of a resumed subgraph shows too.
"""

import operator
from typing import Annotated

from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from tests.saver.corpus import config, history, paused


class State(TypedDict):
    # NOTE: we define a reducer here
    foo: Annotated[str, operator.add]


def run(checkpointer, pause):
    printed = []

    def node_a(state: State):
        printed.append("Called A")
        if state["foo"] == "ask":
            value = interrupt("a or b?")
        else:
            value = "a" if state["foo"] == "" else "b"
        # this is a replacement for a conditional edge function
        if value == "a":
            goto = "node_b"
        else:
            goto = "node_c"

        # note how Command allows you to BOTH update the graph state AND route to the next node
        return Command(
            update={"foo": value},
            goto=goto,
            # this tells LangGraph to navigate to node_b or node_c in the parent graph
            # NOTE: this will navigate to the closest parent graph relative to the subgraph
            graph=Command.PARENT,
        )

    subgraph = StateGraph(State).add_node(node_a).add_edge(START, "node_a").compile()

    def node_b(state: State):
        printed.append("Called B")
        # NOTE: since we've defined a reducer, we don't need to manually append
        # new characters to existing 'foo' value. instead, reducer will append these
        # automatically (via operator.add)
        return {"foo": "b"}

    def node_c(state: State):
        printed.append("Called C")
        return {"foo": "c"}

    builder = StateGraph(State)
    builder.add_edge(START, "subgraph")
    builder.add_node("subgraph", subgraph)
    builder.add_node(node_b)
    builder.add_node(node_c)
    graph = builder.compile(checkpointer=checkpointer)

    outputs = []
    for thread_id, foo in (("to-b", ""), ("to-c", "x")):
        thread = config(thread_id)
        outputs.extend([graph.invoke({"foo": foo}, thread), history(graph, thread)])
    thread = config("asked")
    result = graph.invoke({"foo": "ask"}, thread)
    paused(pause, "asked", result)
    outputs.extend([result, graph.get_state(thread, subgraphs=True)])
    outputs.append(list(graph.stream(Command(resume="a"), thread, subgraphs=True)))
    outputs.extend([graph.get_state(thread), history(graph, thread), printed])
    return outputs
