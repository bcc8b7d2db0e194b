"""Static breakpoints: `interrupt_before` and `interrupt_after` given at compile time (and
at run time), resumed with `invoke(None, config)` / `stream(None, config)`.

LangGraph's "Add human-in-the-loop", section "Debug with interrupts", tab "Compile time"
and extended example "Setting static breakpoints"
(docs.langchain.com/oss/python/langgraph/add-human-in-the-loop): `step_1` → `step_2` →
`step_3` compiled with `interrupt_before=["step_3"]`, streamed (values) until the
breakpoint, `get_state`, then `graph.stream(None, thread, stream_mode="values")`.

Adapted: the steps record their "---Step n---" lines instead of printing them; a second
graph is compiled with `interrupt_after=["step_1", "step_2"]`, and a third run sets
`interrupt_before=["step_2"]` at run time (the docs' "Run time" tab).
"""

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from tests.saver.corpus import config, history


class State(TypedDict):
    input: str


def run(checkpointer, pause):
    printed = []

    def step_1(state):
        printed.append("---Step 1---")

    def step_2(state):
        printed.append("---Step 2---")

    def step_3(state):
        printed.append("---Step 3---")

    builder = StateGraph(State)
    builder.add_node("step_1", step_1)
    builder.add_node("step_2", step_2)
    builder.add_node("step_3", step_3)
    builder.add_edge(START, "step_1")
    builder.add_edge("step_1", "step_2")
    builder.add_edge("step_2", "step_3")
    builder.add_edge("step_3", END)

    outputs = []
    graph = builder.compile(checkpointer=checkpointer, interrupt_before=["step_3"])
    initial_input = {"input": "hello world"}
    thread = config("1")
    outputs.append(list(graph.stream(initial_input, thread, stream_mode="values")))
    outputs.append(graph.get_state(thread))
    outputs.append(list(graph.stream(None, thread, stream_mode="values")))
    outputs.extend([list(printed), history(graph, thread)])

    after = builder.compile(checkpointer=checkpointer, interrupt_after=["step_1", "step_2"])
    thread = config("2")
    outputs.append(after.invoke(initial_input, thread))
    outputs.append(after.get_state(thread))
    outputs.append(after.invoke(None, thread))
    outputs.append(after.get_state(thread))
    outputs.append(after.invoke(None, thread))
    outputs.extend([list(printed), history(after, thread)])

    plain = builder.compile(checkpointer=checkpointer)
    thread = config("3")
    outputs.append(list(plain.stream(initial_input, thread, interrupt_before=["step_2"])))
    outputs.append(plain.get_state(thread))
    outputs.append(list(plain.stream(None, thread)))
    outputs.extend([printed, history(plain, thread)])
    return outputs
