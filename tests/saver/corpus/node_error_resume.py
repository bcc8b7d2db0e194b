"""A node that raises: the run fails with the node's error, the thread keeps the writes of
the node that succeeded beside it in the same step (pending writes) and the failed task's
error; resumed with `invoke(None, config)` once the cause is fixed, only the failed node
runs again.

LangGraph's "Persistence", section "Fault-tolerance" / "Pending writes" ("when a graph
node fails mid-execution at a given superstep, LangGraph stores pending checkpoint writes
from any other nodes that completed successfully at that superstep")
(docs.langchain.com/oss/python/langgraph/persistence) and "Durable execution", section
"Resuming Workflows" ("Recovering from Failures: ... providing it with a None as the input
value") (docs.langchain.com/oss/python/langgraph/durable-execution); the graph is the
fan-out of "Use the graph API", section "Run graph nodes in parallel" (`a`, then `b` and
`c`, then `d`, `aggregate` with `operator.add`).

Adapted: `c` fails on its first run (a flaky service); the runs of each node, the error
and the state (with the failed task's error) are outputs. `c` fails only once `b`'s
writes are saved: LangGraph saves them in the background and, when the run ends on `c`'s
error first, drops them ("cannot schedule new futures after shutdown"), on any saver.
"""

import operator
from threading import Event
from typing import Annotated

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from tests.saver.corpus import config, history


class State(TypedDict):
    # The operator.add reducer fn makes this append-only
    aggregate: Annotated[list, operator.add]


class ServiceUnavailableError(Exception):
    pass


def b_saved(checkpointer, thread, timeout=5.0):
    """Wait until the checkpointer holds `b`'s pending writes."""
    waiting = Event()
    for _ in range(int(timeout / 0.005)):
        saved = checkpointer.get_tuple(thread)
        if saved is not None and any(w[1] == "aggregate" for w in saved.pending_writes or ()):
            return
        waiting.wait(0.005)
    raise TimeoutError("b's writes were not saved")


def run(checkpointer, pause):
    runs = {"a": 0, "b": 0, "c": 0, "d": 0}

    def a(state: State):
        runs["a"] += 1
        return {"aggregate": ["A"]}

    def b(state: State):
        runs["b"] += 1
        return {"aggregate": ["B"]}

    def c(state: State):
        runs["c"] += 1
        if runs["c"] == 1:
            b_saved(checkpointer, thread)
            raise ServiceUnavailableError("the C service is down")
        return {"aggregate": ["C"]}

    def d(state: State):
        runs["d"] += 1
        return {"aggregate": ["D"]}

    builder = StateGraph(State)
    builder.add_node(a)
    builder.add_node(b)
    builder.add_node(c)
    builder.add_node(d)
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("a", "c")
    builder.add_edge("b", "d")
    builder.add_edge("c", "d")
    builder.add_edge("d", END)
    graph = builder.compile(checkpointer=checkpointer)

    thread = config("flaky")
    outputs = []
    try:
        graph.invoke({"aggregate": []}, thread)
    except ServiceUnavailableError as error:
        outputs.append(error)
    failed = graph.get_state(thread)
    outputs.extend([dict(runs), failed, [(t.name, t.error) for t in failed.tasks]])
    outputs.append(history(graph, thread))
    outputs.append(graph.invoke(None, thread))
    outputs.extend([runs, graph.get_state(thread), history(graph, thread)])
    return outputs
