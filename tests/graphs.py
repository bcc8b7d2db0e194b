"""Small graphs that several test modules run, with their state schemas.

Each builder compiles its graph against the store (the checkpointer) it is
given. Where a test looks at what the nodes did, the builder takes a list for
the nodes to append to. Import as `from tests.graphs import ...` (the
repository root is on sys.path, in the test process and in the worker
processes it spawns).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

from domain.graph import END, START, CompiledStateGraph, StateGraph
from domain.record.application import Workflows
from domain.types import interrupt


def linear_graph(
    store: Workflows | None,
    state: type,
    *nodes: Callable[..., Any],
    name: str | None = None,
) -> CompiledStateGraph:
    """START -> nodes[0] -> nodes[1] -> ... -> END, each node named after its function."""
    builder = StateGraph(state)
    for node in nodes:
        builder.add_node(node.__name__, node)
    previous = START
    for node in nodes:
        builder.add_edge(previous, node.__name__)
        previous = node.__name__
    builder.add_edge(previous, END)
    return builder.compile(checkpointer=store, name=name)


# -- seed (a), the refund graph ---------------------------------------------


class Refund(TypedDict):
    refund_amount: float
    approved: Any


def process_refund(state: Refund) -> dict[str, Any]:
    return {"approved": state["approved"]}


def refund_graph(store: Workflows | None, calls: list[str] | None = None) -> CompiledStateGraph:
    """Seed (a): START -> request_approval -> process_refund -> END.

    `request_approval` asks {"question": "Approve a $<refund_amount> refund?"}
    and sets `approved` to the answer; `process_refund` keeps it. Each run of
    `request_approval` appends "before-interrupt" to `calls`, and, once it has
    an answer, "after-interrupt decision=<answer!r>".
    """
    log = [] if calls is None else calls

    def request_approval(state: Refund) -> dict[str, Any]:
        log.append("before-interrupt")
        decision = interrupt({"question": f"Approve a ${state['refund_amount']} refund?"})
        log.append(f"after-interrupt decision={decision!r}")
        return {"approved": decision}

    return linear_graph(store, Refund, request_approval, process_refund)


# -- the counter loop -------------------------------------------------------


class Counter(TypedDict):
    n: int


def counter_loop_graph(store: Workflows | None) -> CompiledStateGraph:
    """START -> inc (n + 1); inc -> inc while n < 100, else END."""
    builder = StateGraph(Counter)
    builder.add_node("inc", lambda s: {"n": s["n"] + 1})
    builder.add_edge(START, "inc")
    builder.add_conditional_edges("inc", lambda s: "inc" if s["n"] < 100 else END)
    return builder.compile(checkpointer=store)


# -- two parallel interrupts ------------------------------------------------


class Out(TypedDict):
    out: Annotated[list, operator.add]


def parallel_interrupts_graph(
    store: Workflows | None,
    runs: list[str] | None = None,
    *,
    join: bool,
    name: str | None = None,
) -> CompiledStateGraph:
    """START -> left and START -> right, in one superstep; each asks "ask <side>".

    Each adds "<side>=<answer>" to `out` and appends its side to `runs` every
    time it runs. With `join`, both lead to `join` (adds "join") -> END;
    without, each leads to END.
    """
    log = [] if runs is None else runs

    def asking(side: str) -> Callable[[Out], dict[str, Any]]:
        def node(state: Out) -> dict[str, Any]:
            log.append(side)
            return {"out": [f"{side}={interrupt('ask ' + side)}"]}

        return node

    builder = StateGraph(Out)
    builder.add_node("left", asking("left"))
    builder.add_node("right", asking("right"))
    builder.add_edge(START, "left")
    builder.add_edge(START, "right")
    if join:
        builder.add_node("join", lambda state: {"out": ["join"]})
        builder.add_edge(["left", "right"], "join")
        builder.add_edge("join", END)
    else:
        builder.add_edge("left", END)
        builder.add_edge("right", END)
    return builder.compile(checkpointer=store, name=name)


# -- the appending nodes of the graph-building tests ------------------------


class Log(TypedDict):
    log: Annotated[list, operator.add]
    seen: Annotated[list, operator.add]
    last: str


def appender(name: str) -> Callable[[Log], dict[str, Any]]:
    """A node that adds `name` to `log` and "<name> saw <log as it read it>" to `seen`."""

    def node(state: Log) -> dict[str, Any]:
        return {"log": [name], "seen": [f"{name} saw {state['log']}"]}

    node.__name__ = name
    return node
