"""Seed (b): single node that interrupts only above a threshold."""
from typing import TypedDict

from domain.checkpoint.memory import InMemorySaver
from domain.graph import END, START, StateGraph
from domain.types import Command, interrupt


class State(TypedDict):
    refund_amount: float
    outcome: str


def check_and_process(state: State):
    amount = state["refund_amount"]
    if amount > 100:
        approved = interrupt({"question": f"Approve a ${amount} refund?"})
        if not approved:
            return {"outcome": "Refund denied by reviewer."}
    return {"outcome": f"Refund of ${amount} processed."}


builder = StateGraph(State)
builder.add_node("check_and_process", check_and_process)
builder.add_edge(START, "check_and_process")
builder.add_edge("check_and_process", END)
graph = builder.compile(checkpointer=InMemorySaver())


def run(thread_id, amount, resume=None):
    config = {"configurable": {"thread_id": thread_id}}
    print(f"--- thread={thread_id} amount={amount} resume={resume}")
    result = graph.invoke({"refund_amount": amount}, config)
    print("Paused:", "__interrupt__" in result)
    print("result:", result)
    if "__interrupt__" in result:
        result = graph.invoke(Command(resume=resume), config)
        print("after resume:", result)
    print(result["outcome"])


run("refund-2-approve", 250.0, resume=True)
run("refund-2-small", 50.0)
run("refund-2-deny", 250.0, resume=False)
