"""A node that both updates the state and chooses the next node by returning
`Command(update=..., goto=...)`, with no edges between the nodes it routes to.

LangGraph's "Use the graph API", section "Combine control flow and state updates with
`Command`" (docs.langchain.com/oss/python/langgraph/use-graph-api): `node_a` returns
`Command(update={"foo": value}, goto=goto)` typed `Command[Literal["node_b", "node_c"]]`;
`node_b` and `node_c` append "b" or "c".

Adapted: `node_a` chooses from its input instead of `random.choice` (deterministic), and
records its "Called A/B/C" lines; the graph is compiled with a checkpointer and both
branches run, each on its thread, with the history.
"""

from typing import Literal

from langgraph.graph import START, StateGraph
from langgraph.types import Command
from typing_extensions import TypedDict

from tests.saver.corpus import config, history


class State(TypedDict):
    foo: str


def run(checkpointer, pause):
    printed = []

    def node_a(state: State) -> Command[Literal["node_b", "node_c"]]:
        printed.append("Called A")
        value = "b" if state["foo"] == "" else "c"
        # this is a replacement for a conditional edge function
        if value == "b":
            goto = "node_b"
        else:
            goto = "node_c"

        # note how Command allows you to BOTH update the graph state AND route to the next node
        return Command(
            # this is the state update
            update={"foo": value},
            # this is a replacement for an edge
            goto=goto,
        )

    def node_b(state: State):
        printed.append("Called B")
        return {"foo": state["foo"] + "b"}

    def node_c(state: State):
        printed.append("Called C")
        return {"foo": state["foo"] + "c"}

    builder = StateGraph(State)
    builder.add_edge(START, "node_a")
    builder.add_node(node_a)
    builder.add_node(node_b)
    builder.add_node(node_c)
    # NOTE: there are no edges between nodes A, B and C!
    graph = builder.compile(checkpointer=checkpointer)

    outputs = []
    for thread_id, foo in (("to-b", ""), ("to-c", "x")):
        thread = config(thread_id)
        outputs.append(list(graph.stream({"foo": foo}, thread, stream_mode="updates")))
        outputs.extend([graph.get_state(thread), history(graph, thread)])
    outputs.append(printed)
    return outputs
