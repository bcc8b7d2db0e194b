"""Time travel, fork: change the state at a past checkpoint with `update_state` and
resume from the checkpoint it makes.

LangGraph's "Use time-travel", section "In a workflow", steps 3 and 4
(docs.langchain.com/oss/python/langgraph/use-time-travel): `new_config =
graph.update_state(selected_state.config, values={"topic": "chickens"})`, then
`graph.invoke(None, new_config)` writes a joke about chickens.

Adapted: the model is a fake chat model; the thread id is fixed; the new checkpoint's
config, the history with both branches, and a second fork from the same past checkpoint
(with `as_node`) are part of the outputs.
"""

from typing import NotRequired

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from tests.saver.corpus import chat, config, history


class State(TypedDict):
    topic: NotRequired[str]
    joke: NotRequired[str]


def run(checkpointer, pause):
    llm = chat(
        'How about "The Secret Life of Socks in the Dryer"?',
        "I finally discovered where all my missing socks go after the dryer.",
        "Why did the chicken join a band? Because it had excellent drumsticks!",
        "Why did the duck cross the road? To prove it wasn't chicken.",
    )

    def generate_topic(state: State):
        """LLM call to generate a topic for the joke"""
        msg = llm.invoke("Give me a funny topic for a joke")
        return {"topic": msg.content}

    def write_joke(state: State):
        """LLM call to write a joke based on the topic"""
        msg = llm.invoke(f"Write a short joke about {state['topic']}")
        return {"joke": msg.content}

    workflow = StateGraph(State)
    workflow.add_node("generate_topic", generate_topic)
    workflow.add_node("write_joke", write_joke)
    workflow.add_edge(START, "generate_topic")
    workflow.add_edge("generate_topic", "write_joke")
    workflow.add_edge("write_joke", END)
    graph = workflow.compile(checkpointer=checkpointer)

    thread = config("chickens")
    first = graph.invoke({}, thread)
    states = list(graph.get_state_history(thread))
    selected_state = states[1]
    new_config = graph.update_state(selected_state.config, values={"topic": "chickens"})
    forked_state = graph.get_state(new_config)
    resumed = graph.invoke(None, new_config)
    other_config = graph.update_state(
        selected_state.config, values={"topic": "ducks"}, as_node="generate_topic"
    )
    other = graph.invoke(None, other_config)
    return [
        first,
        new_config,
        forked_state,
        resumed,
        other_config,
        other,
        graph.get_state(thread),
        history(graph, thread),
    ]
