"""Streaming with `stream_mode="checkpoints"` (each checkpoint as it is saved, as
`get_state` would show it) and `stream_mode="tasks"` (each task as it starts and as it
finishes, with its result, error or interrupts), through an interrupt and a resume; and
the same with `version="v2"` stream parts.

LangGraph's "Stream outputs", section "Supported stream modes" (the `checkpoints` and
`tasks` modes) (docs.langchain.com/oss/python/langgraph/streaming); the graph is the
approve-or-reject pattern of "Add human-in-the-loop", section "Approve or reject"
(`human_approval` returning `Command(goto="some_node")` or
`Command(goto="another_node")`).

Adapted: the pattern's "..." are filled in with a node writing `llm_output` and the two
nodes it routes to.
"""

from typing import Literal, TypedDict

from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt

from tests.saver.corpus import config, paused


class State(TypedDict):
    llm_output: str
    decision: str


def generate(state: State):
    return {"llm_output": "Paris is the capital of France."}


def human_approval(state: State) -> Command[Literal["some_node", "another_node"]]:
    is_approved = interrupt(
        {
            "question": "Is this correct?",
            # Surface the output that should be
            # reviewed and approved by the human.
            "llm_output": state["llm_output"],
        }
    )

    if is_approved:
        return Command(goto="some_node")
    else:
        return Command(goto="another_node")


def some_node(state: State):
    return {"decision": "approved"}


def another_node(state: State):
    return {"decision": "rejected"}


def run(checkpointer, pause):
    graph_builder = StateGraph(State)
    graph_builder.add_node("generate", generate)
    graph_builder.add_node("human_approval", human_approval)
    graph_builder.add_node("some_node", some_node)
    graph_builder.add_node("another_node", another_node)
    graph_builder.add_edge(START, "generate")
    graph_builder.add_edge("generate", "human_approval")
    graph = graph_builder.compile(checkpointer=checkpointer)

    outputs = []
    for thread_id, approved in (("approved", True), ("rejected", False)):
        thread_config = config(thread_id)
        chunks = list(graph.stream({}, thread_config, stream_mode=["checkpoints", "tasks"]))
        paused(pause, thread_id, graph.get_state(thread_config))
        outputs.append(chunks)
        outputs.append(
            list(
                graph.stream(
                    Command(resume=approved), thread_config, stream_mode=["checkpoints", "tasks"]
                )
            )
        )
    thread_config = config("v2")
    parts = list(
        graph.stream(
            {}, thread_config, stream_mode=["checkpoints", "tasks", "updates"], version="v2"
        )
    )
    paused(pause, "v2", graph.get_state(thread_config))
    outputs.append(parts)
    outputs.append(
        list(
            graph.stream(
                Command(resume=True),
                thread_config,
                stream_mode=["checkpoints", "tasks", "updates"],
                version="v2",
            )
        )
    )
    return outputs
