"""Graph builders shared by both sides of the benchmark.

Every builder takes an :class:`Api` namespace (LangGraph's or Holdpoint's) and
returns an *uncompiled* builder, so the very same graph code runs on both
implementations and a builder can be compiled again against another store.
"""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Protocol, TypedDict, cast

Config = dict[str, Any]


class Snapshot(Protocol):
    """What the benchmarks read from ``get_state``."""

    @property
    def values(self) -> dict[str, Any]:
        """The thread's state values."""

    @property
    def next(self) -> tuple[str, ...]:
        """The nodes that would run next (empty at END)."""


class CompiledGraph(Protocol):
    """The part of a compiled graph that the benchmarks call."""

    def invoke(self, graph_input: object, config: Config, /) -> dict[str, Any]:
        """Run the graph until it ends or pauses."""

    def get_state(self, config: Config, /) -> Snapshot:
        """Read the thread's latest state."""


class GraphBuilder(Protocol):
    """A ``StateGraph`` of either side, ready to compile."""

    def compile(self, *, checkpointer: object) -> CompiledGraph:
        """Compile against a checkpointer (a store)."""


@dataclass(frozen=True)
class Api:
    """The part of the LangGraph API that the benchmark graphs use."""

    StateGraph: Any
    START: str
    END: str
    interrupt: Any
    Command: Any


class RefundState(TypedDict):
    """State of seed (a), the refund graph."""

    refund_amount: float
    approved: bool


class CounterState(TypedDict):
    """State of the long loop: a single integer."""

    n: int


class MessagesState(TypedDict):
    """State of the storage loop: a counter and an append-only message list."""

    n: int
    messages: Annotated[list[str], operator.add]


def refund_builder(api: Api) -> GraphBuilder:
    """Build seed (a): START -> request_approval -> process_refund -> END."""
    interrupt = api.interrupt

    def request_approval(state: RefundState) -> dict[str, Any]:
        amount = state["refund_amount"]
        decision = interrupt({"question": f"Approve a ${amount} refund?"})
        return {"approved": decision}

    def process_refund(state: RefundState) -> dict[str, Any]:
        return {"approved": state["approved"]}

    builder = api.StateGraph(RefundState)
    builder.add_node("request_approval", request_approval)
    builder.add_node("process_refund", process_refund)
    builder.add_edge(api.START, "request_approval")
    builder.add_edge("request_approval", "process_refund")
    builder.add_edge("process_refund", api.END)
    return cast("GraphBuilder", builder)


def self_loop_builder(
    api: Api,
    schema: type,
    name: str,
    node: Callable[..., dict[str, Any]],
    route: Callable[..., str],
) -> GraphBuilder:
    """Build START -> ``name``, then a conditional edge from ``name`` to itself or END.

    ``route`` returns ``name`` or END.
    """
    builder = api.StateGraph(schema)
    builder.add_node(name, node)
    builder.add_edge(api.START, name)
    builder.add_conditional_edges(name, route, [name, api.END])
    return cast("GraphBuilder", builder)


def loop_builder(api: Api, steps: int) -> GraphBuilder:
    """Build START -> inc, then inc -> inc while ``n < steps``, else END."""
    end = api.END

    def inc(state: CounterState) -> dict[str, Any]:
        return {"n": state["n"] + 1}

    def route(state: CounterState) -> str:
        return "inc" if state["n"] < steps else end

    return self_loop_builder(api, CounterState, "inc", inc, route)


def message(index: int, size: int) -> str:
    """Return message number ``index``: ``size`` hex characters, distinct per index."""
    chunks, k = [], 0
    while 64 * k < size:
        chunks.append(hashlib.sha256(f"{index}:{k}".encode()).hexdigest())
        k += 1
    return "".join(chunks)[:size]


def messages_loop_builder(api: Api, steps: int, message_size: int) -> GraphBuilder:
    """Build a loop like :func:`loop_builder` that appends one message per step."""
    end = api.END
    texts = [message(i, message_size) for i in range(steps)]

    def append(state: MessagesState) -> dict[str, Any]:
        n = state["n"]
        return {"n": n + 1, "messages": [texts[n]]}

    def route(state: MessagesState) -> str:
        return "append" if state["n"] < steps else end

    return self_loop_builder(api, MessagesState, "append", append, route)
