"""Streaming with `stream_mode="debug"`: every checkpoint, task and task result of a run,
with the checkpoints' configs, values, metadata and next tasks, through an interrupt and
its resume.

LangGraph's "Stream outputs", section "Debugging" (`graph.stream({"topic": "ice
cream"}, stream_mode="debug")`) (docs.langchain.com/oss/python/langgraph/streaming), on
the graph of "Stream graph state" (`refine_topic`, `generate_joke`).

Adapted: compiled with a checkpointer; `refine_topic` asks a human to confirm the topic
(`interrupt`), so that the debug stream shows the interrupt and the resumed run.
"""

from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from tests.saver.corpus import config, paused


class State(TypedDict):
    topic: str
    joke: str


def refine_topic(state: State):
    extra = interrupt({"question": "Refine the topic with?", "topic": state["topic"]})
    return {"topic": state["topic"] + f" and {extra}"}


def generate_joke(state: State):
    return {"joke": f"This is a joke about {state['topic']}"}


def run(checkpointer, pause):
    graph = (
        StateGraph(State)
        .add_node(refine_topic)
        .add_node(generate_joke)
        .add_edge(START, "refine_topic")
        .add_edge("refine_topic", "generate_joke")
        .add_edge("generate_joke", END)
        .compile(checkpointer=checkpointer)
    )
    thread = config("debug")
    first = list(graph.stream({"topic": "ice cream"}, thread, stream_mode="debug"))
    paused(pause, "debug", graph.get_state(thread))
    second = list(graph.stream(Command(resume="cats"), thread, stream_mode="debug"))
    return [first, second]
