"""Seed (a): two-node refund graph with interrupt() + Command(resume=...)."""
from typing import TypedDict

from domain.checkpoint.memory import InMemorySaver
from domain.graph import END, START, StateGraph
from domain.types import Command, interrupt


class State(TypedDict):
    refund_amount: float
    approved: bool


def request_approval(state: State):
    decision = interrupt({"question": f"Approve a ${state['refund_amount']} refund?"})
    return {"approved": decision}


def process_refund(state: State):
    return {"approved": state["approved"]}


builder = StateGraph(State)
builder.add_node("request_approval", request_approval)
builder.add_node("process_refund", process_refund)
builder.add_edge(START, "request_approval")
builder.add_edge("request_approval", "process_refund")
builder.add_edge("process_refund", END)
graph = builder.compile(checkpointer=InMemorySaver())

config = {"configurable": {"thread_id": "refund-request-1"}}
result = graph.invoke({"refund_amount": 250.0, "approved": False}, config)
print(result)
print(graph.get_state(config).next)
print(graph.get_state(config).tasks[0].interrupts)
print(graph.invoke(Command(resume=True), config))
