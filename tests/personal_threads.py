"""A refund graph that declares personal data, and threads of two data subjects on it."""

from __future__ import annotations

from typing import Any, TypedDict

from domain.graph import END, START, CompiledStateGraph, StateGraph
from domain.privacy.personal import Personal
from domain.record.application import Workflows
from domain.types import Command, interrupt

REVIEWER = {"id": "rita", "role": "reviewer", "authenticated": True, "via": "test"}
ALICE = {
    "customer_id": "cust-alice-7731",
    "email": "alice.erasable@example.com",
    "name": "Alice Erasable-Smith",
}
BOB = {"customer_id": "cust-bob-4410", "email": "bob.kept@example.com", "name": "Bob Kept-Jones"}
# The outcome names the customer: a value derived from personal data is personal too,
# and is sealed only if declared.
PERSONAL = Personal(
    subject="metadata:customer_id",
    state=("email", "name", "outcome"),
    payload=("email", "name"),
)


class Refund(TypedDict):
    email: str
    name: str
    amount: float
    outcome: str


def review(state: Refund) -> dict[str, Any]:
    approved = interrupt(
        {"question": "Refund?", "email": state["email"], "name": state["name"], "amount": 150}
    )
    verdict = "approved" if approved else "denied"
    return {"outcome": f"Refund to {state['name']} {verdict}"}


def refund_builder() -> StateGraph:
    builder = StateGraph(Refund)
    builder.add_node("review", review)
    builder.add_edge(START, "review")
    builder.add_edge("review", END)
    return builder


def refund_graph(store: Workflows, personal: Personal | None = PERSONAL) -> CompiledStateGraph:
    return refund_builder().compile(checkpointer=store, name="refund", personal=personal)


def config(thread_id: str, subject: dict[str, str] | None = None, **more: Any) -> dict[str, Any]:
    found: dict[str, Any] = {"configurable": {"thread_id": thread_id, **more}}
    if subject is not None:
        found["metadata"] = {"customer_id": subject["customer_id"]}
    return found


def start(graph: CompiledStateGraph, thread_id: str, subject: dict[str, str]) -> None:
    """A refund asked for by `subject`, waiting for its review."""
    person = {"email": subject["email"], "name": subject["name"]}
    graph.invoke({**person, "amount": 150.0}, config(thread_id, subject))


def decide(graph: CompiledStateGraph, thread_id: str) -> None:
    graph.invoke(Command(resume=True), config(thread_id, actor=REVIEWER))


def plaintexts(subject: dict[str, str]) -> list[bytes]:
    """What must not be found of `subject` once erased."""
    return [value.encode() for value in subject.values()]
