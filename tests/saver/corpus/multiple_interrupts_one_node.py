"""Two interrupts in one node, answered one after the other: LangGraph matches resume
values to a node's interrupts by their index, so the node's structure must not change
between executions; changing it (here by a `Command(resume=..., update=...)` that makes
the first `interrupt` call be skipped) gives the answer to the wrong question.

LangGraph's "Add human-in-the-loop", section "Using multiple interrupts in a single
node" (docs.langchain.com/oss/python/langgraph/add-human-in-the-loop): `human_node` asks
"what is your name?" then "what is your age?". The docs' extended example shows the
non-deterministic variant: resumed with `Command(resume="John", update={"name": "foo"})`,
it prints `Name: N/A. Age: John`.

Adapted: a second thread answers both questions in turn (the deterministic use), the
prints are recorded, the thread ids are fixed.
"""

from typing import TypedDict

from langgraph.constants import START
from langgraph.graph import StateGraph
from langgraph.types import Command, interrupt

from tests.saver.corpus import config, history, paused


class State(TypedDict):
    """The graph state."""

    age: str | None
    name: str | None


def run(checkpointer, pause):
    printed = []

    def human_node(state: State):
        if not state.get("name"):
            name = interrupt("what is your name?")
        else:
            name = "N/A"

        if not state.get("age"):
            age = interrupt("what is your age?")
        else:
            age = "N/A"

        printed.append(f"Name: {name}. Age: {age}")

        return {
            "age": age,
            "name": name,
        }

    builder = StateGraph(State)
    builder.add_node("human_node", human_node)
    builder.add_edge(START, "human_node")
    graph = builder.compile(checkpointer=checkpointer)

    outputs = []
    mismatched = config("mismatched")
    chunks = list(graph.stream({"age": None, "name": None}, mismatched))
    paused(pause, "mismatched", chunks)
    outputs.append(chunks)
    outputs.append(list(graph.stream(Command(resume="John", update={"name": "foo"}), mismatched)))
    outputs.append(graph.get_state(mismatched))

    in_turn = config("in-turn")
    chunks = list(graph.stream({"age": None, "name": None}, in_turn))
    paused(pause, "in-turn", chunks)
    outputs.append(chunks)
    chunks = list(graph.stream(Command(resume="John"), in_turn))
    paused(pause, "in-turn", chunks)
    outputs.append(chunks)
    outputs.append(graph.get_state(in_turn))
    outputs.append(list(graph.stream(Command(resume="42"), in_turn)))
    outputs.extend([printed, graph.get_state(in_turn), history(graph, in_turn)])
    return outputs
