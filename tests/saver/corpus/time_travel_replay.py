"""Time travel, replay: run a graph, list its checkpoints with `get_state_history`, and
run it again from a past checkpoint with `invoke(None, that_checkpoint's_config)`.

LangGraph's "Use time-travel", section "In a workflow", steps 1, 2 and 4
(docs.langchain.com/oss/python/langgraph/use-time-travel): `generate_topic` then
`write_joke`, each calling a model; `states = list(graph.get_state_history(config))`,
`selected_state = states[1]` (before `write_joke`), then `graph.invoke(None,
selected_state.config)`, which re-runs `write_joke` from there on a new branch.

Adapted: the model is a fake chat model (its second joke differs from its first, so the
replay shows); the thread id is fixed rather than a `uuid4()`; the history is read again
after the replay, and the original branch's checkpoint is still readable.
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
        "My blue argyle is now living in Bermuda with a red polka dot.",
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

    thread = config("socks")
    state = graph.invoke({}, thread)
    states = list(graph.get_state_history(thread))
    listing = [(state.next, state.config["configurable"]["checkpoint_id"]) for state in states]
    selected_state = states[1]
    replayed = graph.invoke(None, selected_state.config)
    return [
        state,
        listing,
        selected_state.next,
        selected_state.values,
        replayed,
        graph.get_state(thread),
        history(graph, thread),
        graph.get_state(states[0].config),  # the first branch's end, still there
    ]
