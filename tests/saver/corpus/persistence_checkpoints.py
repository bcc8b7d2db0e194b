"""The checkpoints a run leaves, read every way LangGraph offers: `get_state` (latest, and
at a given `checkpoint_id`), `get_state_history` (whole, with `limit`, `before` and
`filter`), the checkpointer's own `get_tuple` and `list`; and `update_state`, whose
values go through the reducers, with and without `as_node`.

LangGraph's "Persistence", sections "Checkpoints" (`node_a`, `node_b`, `bar` with the
`add` reducer: "we expect to see exactly 4 checkpoints"), "Get state" (latest, and "get a
state snapshot for a specific checkpoint_id"), "Get state history" and "Update state"
(`graph.update_state(config, {"foo": 2, "bar": ["b"]})` gives `{"foo": 2, "bar": ["a",
"b"]}`; `as_node`) (docs.langchain.com/oss/python/langgraph/persistence).

Adapted: "Update state" declares `foo: int`, "Checkpoints" `foo: str`; the program keeps
the latter and updates `foo` with "2". After the update `as_node="node_a"`, `node_b` is
next, and the thread is run on from there.
"""

from operator import add
from typing import Annotated

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from tests.saver.corpus import history


class State(TypedDict):
    foo: str
    bar: Annotated[list[str], add]


def node_a(state: State):
    return {"foo": "a", "bar": ["a"]}


def node_b(state: State):
    return {"foo": "b", "bar": ["b"]}


def tuples(found):
    """Checkpoint tuples but their channel versions (each saver numbers them its own way:
    `InMemorySaver` with random suffixes, `HoldpointSaver` with integers)."""
    return [
        (t.config, t.metadata, t.parent_config, t.checkpoint["channel_values"], t.pending_writes)
        for t in found
    ]


def run(checkpointer, pause):
    workflow = StateGraph(State)
    workflow.add_node(node_a)
    workflow.add_node(node_b)
    workflow.add_edge(START, "node_a")
    workflow.add_edge("node_a", "node_b")
    workflow.add_edge("node_b", END)
    graph = workflow.compile(checkpointer=checkpointer)

    config: RunnableConfig = {"configurable": {"thread_id": "1"}}
    outputs = [graph.invoke({"foo": ""}, config)]
    states = list(graph.get_state_history(config))
    outputs.extend([len(states), graph.get_state(config), history(graph, config)])
    middle = states[1].config["configurable"]["checkpoint_id"]
    outputs.append(graph.get_state({"configurable": {"thread_id": "1", "checkpoint_id": middle}}))
    outputs.append(history(graph, config, limit=2))
    outputs.append(history(graph, config, before=states[1].config))
    outputs.append(history(graph, config, filter={"source": "loop"}))
    outputs.append(history(graph, config, filter={"step": 1}))
    outputs.append(tuples([checkpointer.get_tuple(config)]))
    outputs.append(tuples(checkpointer.list(config, limit=3)))

    outputs.append(graph.update_state(config, {"foo": "2", "bar": ["b"]}))
    outputs.append(graph.get_state(config))
    outputs.append(graph.update_state(config, {"bar": ["c"]}, as_node="node_a"))
    outputs.append(graph.get_state(config))
    outputs.append(graph.invoke(None, config))
    outputs.append(history(graph, config))
    return outputs
