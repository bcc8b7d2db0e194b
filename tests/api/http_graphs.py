"""Graphs the HTTP tests serve next to the seed examples."""

from __future__ import annotations

from typing import Any, TypedDict

from domain.graph import CompiledStateGraph
from domain.record.application import Workflows
from domain.types import interrupt
from tests.graphs import linear_graph, parallel_interrupts_graph


class Payment(TypedDict):
    amount: float
    paid: Any


def approve_payment(state: Payment) -> dict[str, Any]:
    """Only an admin may answer: the interrupt requires the role."""
    return {"paid": interrupt({"question": f"Pay {state['amount']}?"}, required_role="admin")}


class Publication(TypedDict):
    draft: str
    published: Any


def review_draft(state: Publication) -> dict[str, Any]:
    """Every answer must say why: the interrupt requires a reason."""
    return {"published": interrupt({"draft": state["draft"]}, reason_required=True)}


class Numbers(TypedDict):
    x: int


def explode(state: Numbers) -> dict[str, Any]:
    msg = f"boom at x={state['x']}"
    raise ValueError(msg)


class Echo(TypedDict):
    payload: Any
    nest: int
    answer: Any


def ask(state: Echo) -> dict[str, Any]:
    """Shows the payload to a human (wrapped in `nest` lists, when given)."""
    value = state.get("payload")
    for _ in range(state.get("nest") or 0):
        value = [value]
    return {"answer": interrupt(value)}


def four_eyes_payment(state: Payment) -> dict[str, Any]:
    """Two different reviewers must approve: the interrupt needs two approvals."""
    return {"paid": interrupt({"question": f"Pay {state['amount']}?"}, approvals=2)}


def served_test_graphs(store: Workflows) -> dict[str, CompiledStateGraph]:
    return {
        "echo": linear_graph(store, Echo, ask, name="echo"),
        "guarded": linear_graph(store, Payment, approve_payment, name="guarded"),
        "explained": linear_graph(store, Publication, review_draft, name="explained"),
        "boom": linear_graph(store, Numbers, explode, name="boom"),
        "parallel": parallel_interrupts_graph(store, join=True, name="parallel"),
        "four_eyes": linear_graph(store, Payment, four_eyes_payment, name="four_eyes"),
    }
