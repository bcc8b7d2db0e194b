"""A subgraph invoked inside a parent's node function, with an interrupt in the subgraph:
on resume the parent's node runs again from its start, the subgraph's nodes that finished
do not, and the interrupted one runs again from its start.

LangGraph's "Add human-in-the-loop", section "Using with subgraphs called as functions",
extended example "parent and subgraph execution flow"
(docs.langchain.com/oss/python/langgraph/add-human-in-the-loop): counters of the times
each node is entered, `graph.stream(...)` until the interrupt, then
`graph.stream(Command(resume="35"), config)`.

Adapted: the counters live in `run` rather than in globals and are part of the outputs
instead of printed; the thread id is a fixed string rather than a `uuid4()`; the
subgraph is compiled without a checkpointer of its own (the docs' listing compiles it with
a separate `InMemorySaver`, which LangGraph then uses for the subgraph instead of the
parent's: it would bypass the saver under test), so it uses its parent's.
"""

from langgraph.constants import START
from langgraph.graph import StateGraph
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from tests.saver.corpus import config, paused


class State(TypedDict):
    """The graph state."""

    state_counter: int


def run(checkpointer, pause):
    entered = {"node_in_subgraph": 0, "human_node": 0, "parent_node": 0}
    log = []

    def node_in_subgraph(state: State):
        """A node in the sub-graph."""
        entered["node_in_subgraph"] += 1  # This code will **NOT** run again!

    def human_node(state: State):
        entered["human_node"] += 1  # This code will run again!
        answer = interrupt("what is your name?")
        log.append(f"Got an answer of {answer}")

    subgraph_builder = StateGraph(State)
    subgraph_builder.add_node("some_node", node_in_subgraph)
    subgraph_builder.add_node("human_node", human_node)
    subgraph_builder.add_edge(START, "some_node")
    subgraph_builder.add_edge("some_node", "human_node")
    subgraph = subgraph_builder.compile()

    def parent_node(state: State):
        """This parent node will invoke the subgraph."""
        entered["parent_node"] += 1  # This code will run again on resuming!
        return subgraph.invoke(state)

    builder = StateGraph(State)
    builder.add_node("parent_node", parent_node)
    builder.add_edge(START, "parent_node")
    graph = builder.compile(checkpointer=checkpointer)

    thread = config("subgraph-as-function")
    first = list(graph.stream({"state_counter": 1}, thread))
    counts_before = dict(entered)
    paused(pause, "subgraph-as-function", first)
    state_paused = graph.get_state(thread, subgraphs=True)
    second = list(graph.stream(Command(resume="35"), thread))
    return [first, counts_before, state_paused, second, dict(entered), log, graph.get_state(thread)]
