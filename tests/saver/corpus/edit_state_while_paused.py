"""Editing a thread's state while it is paused at an interrupt: `update_state` (with and
without `as_node`) makes a new checkpoint, the paused node will ask again when the thread
goes on (its question is then a new interrupt, with a new id), and the answer applies to
the edited state.

LangGraph's tutorial "Customize state", section "Manually update the state" ("at any
point (including when interrupted), you can manually override a key using
`graph.update_state`") (docs.langchain.com/oss/python/langgraph/customize-state), with
the graph of "Add human-in-the-loop", section "Review and edit state" (`human_editing`
asks for an edit of `llm_generated_summary` and stores `result["edited_text"]`)
(docs.langchain.com/oss/python/langgraph/add-human-in-the-loop); `as_node` as in
"Persistence", section "Update state".

Adapted: the graph's "..." are filled in with a node writing the summary and one
publishing it; a second thread edits as the summarizing node (`as_node`), which makes the
review node run afresh.
"""

from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from tests.saver.corpus import config, history, paused


class State(TypedDict):
    llm_generated_summary: str
    published: str


def summarize(state: State):
    return {"llm_generated_summary": "An LLM-written summary."}


def human_editing(state: State):
    result = interrupt(
        {
            "task": "Review the output from the LLM and make any necessary edits.",
            "llm_generated_summary": state["llm_generated_summary"],
        }
    )
    return {"llm_generated_summary": result["edited_text"]}


def publish(state: State):
    return {"published": state["llm_generated_summary"]}


def run(checkpointer, pause):
    graph_builder = StateGraph(State)
    graph_builder.add_node("summarize", summarize)
    graph_builder.add_node("human_editing", human_editing)
    graph_builder.add_node("publish", publish)
    graph_builder.add_edge(START, "summarize")
    graph_builder.add_edge("summarize", "human_editing")
    graph_builder.add_edge("human_editing", "publish")
    graph_builder.add_edge("publish", END)
    graph = graph_builder.compile(checkpointer=checkpointer)

    outputs = []
    for thread_id, as_node in (("edited", None), ("as-node", "summarize")):
        thread_config = config(thread_id)
        result = graph.invoke({}, thread_config)
        paused(pause, thread_id, result)
        outputs.append(result)
        edit = {"llm_generated_summary": "A summary a human corrected."}
        outputs.append(graph.update_state(thread_config, edit, as_node=as_node))
        state = graph.get_state(thread_config)
        outputs.append(state)
        if state.interrupts:
            paused(pause, thread_id, state)
        chunks = list(graph.stream(None, thread_config))
        outputs.append(chunks)
        paused(pause, thread_id, chunks)
        outputs.append(
            graph.invoke(Command(resume={"edited_text": "The edited text"}), thread_config)
        )
        outputs.extend([graph.get_state(thread_config), history(graph, thread_config)])
    return outputs
