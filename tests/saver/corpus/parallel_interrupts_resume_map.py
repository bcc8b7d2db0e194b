"""Two nodes that run in parallel both pause at an interrupt; one invocation resumes both
with a map from interrupt id to resume value. A second thread answers one at a time.

LangGraph's "Add human-in-the-loop", section "Resume multiple interrupts with one
invocation" (docs.langchain.com/oss/python/langgraph/add-human-in-the-loop):
`human_node_1` and `human_node_2` from START, resumed with `Command(resume=resume_map)`,
`resume_map = {i.id: f"human input for prompt {i.value}" for i in
graph.get_state(config).interrupts}`.

Adapted: the docs' listing reads `parent.get_state(thread_config)` and
`i.interrupt_id` (names from an older version); the graph and config of the listing are
used, with `Interrupt.id`. The thread ids are fixed; the interrupts of a result are
sorted (the parallel nodes report them in the order they reach them).
"""

from typing import TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.constants import START
from langgraph.graph import StateGraph
from langgraph.types import Command, interrupt

from tests.saver.corpus import config as thread_config
from tests.saver.corpus import history, interrupts_sorted, paused


class State(TypedDict):
    text_1: str
    text_2: str


def human_node_1(state: State):
    value = interrupt({"text_to_revise": state["text_1"]})
    return {"text_1": value}


def human_node_2(state: State):
    value = interrupt({"text_to_revise": state["text_2"]})
    return {"text_2": value}


def run(checkpointer, pause):
    graph_builder = StateGraph(State)
    graph_builder.add_node("human_node_1", human_node_1)
    graph_builder.add_node("human_node_2", human_node_2)
    graph_builder.add_edge(START, "human_node_1")
    graph_builder.add_edge(START, "human_node_2")
    graph = graph_builder.compile(checkpointer=checkpointer)

    config: RunnableConfig = thread_config("together")
    result = graph.invoke({"text_1": "original text 1", "text_2": "original text 2"}, config=config)
    paused(pause, "together", result)
    state = graph.get_state(config)
    resume_map = {
        i.id: f"human input for prompt {i.value}" for i in graph.get_state(config).interrupts
    }
    together = graph.invoke(Command(resume=resume_map), config=config)

    one_by_one: RunnableConfig = thread_config("one-by-one")
    started = graph.invoke({"text_1": "first", "text_2": "second"}, config=one_by_one)
    paused(pause, "one-by-one", started)
    first = sorted(graph.get_state(one_by_one).interrupts, key=lambda i: str(i.value))[0]
    partly = graph.invoke(Command(resume={first.id: "edited first"}), config=one_by_one)
    paused(pause, "one-by-one", partly)
    partly_state = graph.get_state(one_by_one)
    rest = {i.id: "edited second" for i in partly_state.interrupts}
    done = graph.invoke(Command(resume=rest), config=one_by_one)
    return [
        interrupts_sorted(result),
        state,
        together,
        graph.get_state(config),
        history(graph, config),
        interrupts_sorted(started),
        partly,
        partly_state,
        done,
        history(graph, one_by_one),
    ]
