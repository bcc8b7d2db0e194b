"""Streaming a graph's state: `stream_mode="updates"` (each node's update),
`stream_mode="values"` (the whole state after each step) and both at once (`(mode,
chunk)` pairs), on a checkpointed thread that pauses before a node and is resumed.

LangGraph's "Stream outputs", sections "Stream graph state" and "Stream multiple modes"
(docs.langchain.com/oss/python/langgraph/streaming): `refine_topic` appends " and cats",
`generate_joke` writes "This is a joke about ...", streamed with {"topic": "ice cream"}.

Adapted: compiled with a checkpointer (and `interrupt_before=["generate_joke"]` on the
last thread, so that the stream of a resumed run shows too).
"""

from typing import TypedDict

from langgraph.graph import END, START, StateGraph

from tests.saver.corpus import config


class State(TypedDict):
    topic: str
    joke: str


def refine_topic(state: State):
    return {"topic": state["topic"] + " and cats"}


def generate_joke(state: State):
    return {"joke": f"This is a joke about {state['topic']}"}


def run(checkpointer, pause):
    builder = (
        StateGraph(State)
        .add_node(refine_topic)
        .add_node(generate_joke)
        .add_edge(START, "refine_topic")
        .add_edge("refine_topic", "generate_joke")
        .add_edge("generate_joke", END)
    )
    graph = builder.compile(checkpointer=checkpointer)
    outputs = [
        list(graph.stream({"topic": "ice cream"}, config("updates"), stream_mode="updates")),
        list(graph.stream({"topic": "ice cream"}, config("values"), stream_mode="values")),
        list(
            graph.stream({"topic": "ice cream"}, config("both"), stream_mode=["updates", "values"])
        ),
    ]
    stepped = builder.compile(checkpointer=checkpointer, interrupt_before=["generate_joke"])
    thread = config("stepped")
    outputs.append(list(stepped.stream({"topic": "ice cream"}, thread, stream_mode="updates")))
    outputs.append(list(stepped.stream(None, thread, stream_mode=["values", "updates"])))
    outputs.append(stepped.get_state(thread))
    return outputs
