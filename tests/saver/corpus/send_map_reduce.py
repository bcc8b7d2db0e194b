"""Map-reduce with `Send`: one node fans out to a node per subject, their results are
gathered by a reducer, and a last node reads them all.

LangGraph's "Use the graph API", section "Map-Reduce and the Send API"
(docs.langchain.com/oss/python/langgraph/use-graph-api): `generate_topics`,
`continue_to_jokes` returning `[Send("generate_joke", {"subject": s}) ...]`, `jokes`
gathered with `operator.add`, streamed (updates).

Adapted: the jokes' streamed updates are sorted (they come in the order their tasks
finish, which varies from run to run); compiled with a checkpointer and run on a thread;
the state and the history are read afterwards, and the fanned-out step is run once more
from a checkpoint in the middle (`invoke(None, config_of_that_checkpoint)`) to replay the
pending `Send`s.
"""

import operator
from typing import Annotated

from langgraph.graph import END, START, StateGraph
from langgraph.types import Send
from typing_extensions import TypedDict

from tests.saver.corpus import config, history


class OverallState(TypedDict):
    topic: str
    subjects: list[str]
    jokes: Annotated[list[str], operator.add]
    best_selected_joke: str


def generate_topics(state: OverallState):
    return {"subjects": ["lions", "elephants", "penguins"]}


def generate_joke(state: OverallState):
    joke_map = {
        "lions": "Why don't lions like fast food? Because they can't catch it!",
        "elephants": "Why don't elephants use computers? They're afraid of the mouse!",
        "penguins": "Why don't penguins like talking to strangers at parties? "
        "Because they find it hard to break the ice.",
    }
    return {"jokes": [joke_map[state["subject"]]]}


def continue_to_jokes(state: OverallState):
    return [Send("generate_joke", {"subject": s}) for s in state["subjects"]]


def best_joke(state: OverallState):
    return {"best_selected_joke": "penguins"}


def run(checkpointer, pause):
    builder = StateGraph(OverallState)
    builder.add_node("generate_topics", generate_topics)
    builder.add_node("generate_joke", generate_joke)
    builder.add_node("best_joke", best_joke)
    builder.add_edge(START, "generate_topics")
    builder.add_conditional_edges("generate_topics", continue_to_jokes, ["generate_joke"])
    builder.add_edge("generate_joke", "best_joke")
    builder.add_edge("best_joke", END)
    builder.add_edge("generate_topics", END)
    graph = builder.compile(checkpointer=checkpointer)

    thread = config("jokes")
    steps = list(graph.stream({"topic": "animals"}, thread))
    past = history(graph, thread)
    fanned_out = next(
        snapshot
        for snapshot in graph.get_state_history(thread)
        if snapshot.next == ("generate_joke", "generate_joke", "generate_joke")
    )
    replayed = list(graph.stream(None, fanned_out.config))
    return [
        tasks_in_any_order(steps),
        graph.get_state(thread),
        past,
        fanned_out,
        tasks_in_any_order(replayed),
        history(graph, thread),
    ]


def tasks_in_any_order(steps):
    """The jokes' updates sorted: LangGraph runs a step's tasks in threads, and streams
    each task's update as it finishes, in an order that varies from run to run."""
    jokes = [step for step in steps if "generate_joke" in step]
    return [step for step in steps if "generate_joke" not in step] + sorted(jokes, key=str)
