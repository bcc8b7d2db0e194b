"""The seed refund graph, built in: `holdpoint demo` runs it, and a server serves it when
no graph is named and the examples folder is not installed (`service.graph_loader`)."""

from __future__ import annotations

from typing import Any, TypedDict

from domain.graph import END, START, CompiledStateGraph, StateGraph
from domain.types import interrupt


class RefundState(TypedDict):
    refund_amount: float
    outcome: str


def check_and_process(state: RefundState) -> dict[str, str]:
    """Seed (b): refunds over $100 need a human's approval."""
    amount = state["refund_amount"]
    if amount > 100:
        approved = interrupt({"question": f"Approve a ${amount} refund?"})
        if not approved:
            return {"outcome": "Refund denied by reviewer."}
    return {"outcome": f"Refund of ${amount} processed."}


def build_graph(checkpointer: Any) -> CompiledStateGraph:
    builder = StateGraph(RefundState)
    builder.add_node("check_and_process", check_and_process)
    builder.add_edge(START, "check_and_process")
    builder.add_edge("check_and_process", END)
    return builder.compile(checkpointer=checkpointer, name="refund")
