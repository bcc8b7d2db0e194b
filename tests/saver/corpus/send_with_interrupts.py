"""Map-reduce with `Send` where each mapped task pauses for a human: the interrupts of
the fanned-out tasks are pending together; answered by a resume map, part at a time, the
tasks that were answered finish and the others stay paused until they are answered too.

LangGraph's "Use the graph API", section "Map-Reduce and the Send API"
(docs.langchain.com/oss/python/langgraph/use-graph-api: `generate_topics`,
`continue_to_jokes` sending `Send("generate_joke", {"subject": s})`, `jokes` gathered
with `operator.add`, `best_joke`), with the review of "Add human-in-the-loop", section
"Review and edit state", and the resume map of section "Resume multiple interrupts with
one invocation" (docs.langchain.com/oss/python/langgraph/add-human-in-the-loop).

Adapted: each joke is reviewed (`interrupt`) before it is gathered; the first resume
answers two of the three interrupts, the second the last one.
"""

import operator
from typing import Annotated

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Send, interrupt
from typing_extensions import TypedDict

from tests.saver.corpus import config, history, paused


class OverallState(TypedDict):
    topic: str
    subjects: list[str]
    jokes: Annotated[list[str], operator.add]
    best_selected_joke: str


def generate_topics(state: OverallState):
    return {"subjects": ["lions", "elephants", "penguins"]}


def generate_joke(state: OverallState):
    joke = f"A joke about {state['subject']}"
    edited = interrupt({"joke": joke, "subject": state["subject"]})
    return {"jokes": [edited]}


def continue_to_jokes(state: OverallState):
    return [Send("generate_joke", {"subject": s}) for s in state["subjects"]]


def best_joke(state: OverallState):
    return {"best_selected_joke": sorted(state["jokes"])[0]}


def run(checkpointer, pause):
    builder = StateGraph(OverallState)
    builder.add_node("generate_topics", generate_topics)
    builder.add_node("generate_joke", generate_joke)
    builder.add_node("best_joke", best_joke)
    builder.add_edge(START, "generate_topics")
    builder.add_conditional_edges("generate_topics", continue_to_jokes, ["generate_joke"])
    builder.add_edge("generate_joke", "best_joke")
    builder.add_edge("best_joke", END)
    graph = builder.compile(checkpointer=checkpointer)

    thread = config("jokes")
    result = graph.invoke({"topic": "animals"}, thread)
    paused(pause, "jokes", result)
    state = graph.get_state(thread)
    by_subject = {i.value["subject"]: i for i in state.interrupts}
    first = {by_subject[s].id: f"An edited joke about {s}" for s in ("lions", "penguins")}
    partly = graph.invoke(Command(resume=first), thread)
    paused(pause, "jokes", partly)
    partly_state = graph.get_state(thread)
    rest = {i.id: f"An edited joke about {i.value['subject']}" for i in partly_state.interrupts}
    done = graph.invoke(Command(resume=rest), thread)
    return [
        sorted(result["__interrupt__"], key=lambda i: i.value["subject"]),
        sorted(state.interrupts, key=lambda i: i.value["subject"]),
        partly,
        partly_state,
        done,
        graph.get_state(thread),
        history(graph, thread),
    ]
