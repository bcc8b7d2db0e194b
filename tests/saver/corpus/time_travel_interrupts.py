"""Time travel through a human's answer: a thread paused at an interrupt and answered is
replayed from the checkpoint before the answer, which pauses again on a new branch (a
new interrupt, in the pending queue); answered differently, the branch ends differently,
while the first branch stays as it was.

LangGraph's "Use time-travel" (docs.langchain.com/oss/python/langgraph/use-time-travel:
`get_state_history`, `invoke(None, selected_state.config)`, `update_state` on a past
checkpoint) applied to the "Approve or reject" pattern of "Add human-in-the-loop"
(`human_approval` returns `Command(goto="some_node")` or `Command(goto="another_node")`)
(docs.langchain.com/oss/python/langgraph/add-human-in-the-loop).

Adapted: the pattern's "..." are filled in with a node writing `llm_output` and the two
nodes it routes to; a third branch edits `llm_output` at the paused checkpoint with
`update_state` before answering.
"""

from typing import Literal, TypedDict

from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt

from tests.saver.corpus import config, history, paused


class State(TypedDict):
    llm_output: str
    decision: str


def generate(state: State):
    return {"llm_output": "Paris is the capital of France."}


def human_approval(state: State) -> Command[Literal["some_node", "another_node"]]:
    is_approved = interrupt({"question": "Is this correct?", "llm_output": state["llm_output"]})
    if is_approved:
        return Command(goto="some_node")
    else:
        return Command(goto="another_node")


def some_node(state: State):
    return {"decision": f"approved: {state['llm_output']}"}


def another_node(state: State):
    return {"decision": f"rejected: {state['llm_output']}"}


def run(checkpointer, pause):
    graph_builder = StateGraph(State)
    graph_builder.add_node("generate", generate)
    graph_builder.add_node("human_approval", human_approval)
    graph_builder.add_node("some_node", some_node)
    graph_builder.add_node("another_node", another_node)
    graph_builder.add_edge(START, "generate")
    graph_builder.add_edge("generate", "human_approval")
    graph = graph_builder.compile(checkpointer=checkpointer)

    thread = config("approval")
    outputs = []
    result = graph.invoke({}, thread)
    paused(pause, "approval", result)
    outputs.extend([result, graph.invoke(Command(resume=True), thread)])

    before_answer = next(
        state for state in graph.get_state_history(thread) if state.next == ("human_approval",)
    )
    outputs.append(before_answer)
    replayed = graph.invoke(None, before_answer.config)
    paused(pause, "approval", replayed)
    outputs.extend([replayed, graph.get_state(thread)])
    outputs.append(graph.invoke(Command(resume=False), thread))

    edited_config = graph.update_state(
        before_answer.config, {"llm_output": "Lyon is the capital of France."}
    )
    edited = graph.invoke(None, edited_config)
    paused(pause, "approval", edited)
    outputs.extend([edited, graph.invoke(Command(resume=False), thread)])
    outputs.extend([graph.get_state(thread), history(graph, thread)])
    return outputs
