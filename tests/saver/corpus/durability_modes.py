"""The three durability modes of a run: "sync" (each checkpoint saved before the next step
starts), "async" (saved while the next step runs; the default) and "exit" (saved only when
the run ends, here at an interrupt), and what each leaves in the thread's history.

LangGraph's "Durable execution", section "Durability modes" (`graph.stream({"input":
"test"}, durability="sync")`) (docs.langchain.com/oss/python/langgraph/durable-execution),
on the three-step graph of "Add human-in-the-loop", extended example "Setting static
breakpoints" (`step_1` → `step_2` → `step_3`)
(docs.langchain.com/oss/python/langgraph/add-human-in-the-loop).

Adapted: `step_2` asks for approval (`interrupt`) so that each mode is seen pausing and
resuming; each mode runs on a thread of its own.
"""

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from tests.saver.corpus import config, history, paused


class State(TypedDict):
    input: str
    steps: list[str]


def step_1(state):
    return {"steps": ["step_1"]}


def step_2(state):
    approved = interrupt("Continue to step 3?")
    return {"steps": [*state["steps"], f"step_2 ({approved})"]}


def step_3(state):
    return {"steps": [*state["steps"], "step_3"]}


def run(checkpointer, pause):
    builder = StateGraph(State)
    builder.add_node("step_1", step_1)
    builder.add_node("step_2", step_2)
    builder.add_node("step_3", step_3)
    builder.add_edge(START, "step_1")
    builder.add_edge("step_1", "step_2")
    builder.add_edge("step_2", "step_3")
    builder.add_edge("step_3", END)
    graph = builder.compile(checkpointer=checkpointer)

    outputs = []
    for durability in ("sync", "async", "exit"):
        thread = config(durability)
        chunks = list(graph.stream({"input": "test"}, thread, durability=durability))
        paused(pause, durability, chunks)
        outputs.extend([chunks, graph.get_state(thread), history(graph, thread)])
        outputs.append(list(graph.stream(Command(resume=True), thread, durability=durability)))
        outputs.extend([graph.get_state(thread), history(graph, thread)])
    return outputs
