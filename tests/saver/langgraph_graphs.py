"""Real LangGraph graphs for the saver's tests, written as LangGraph's own docs write them."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AnyMessage
from langchain_core.tools import tool
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, interrupt

from domain.record.application import Workflows
from langgraph.checkpoint.holdpoint import HoldpointSaver


class Refund(TypedDict):
    amount: int
    log: Annotated[list[str], operator.add]


def review(state: Refund) -> dict[str, Any]:
    approved = interrupt({"question": "Approve the refund?", "amount": state["amount"]})
    return {"log": [f"reviewed: {approved}"]}


def pay(state: Refund) -> dict[str, Any]:
    return {"log": [f"paid {state['amount']}"]}


def refund_builder(pay: Callable[[Refund], Any] = pay) -> StateGraph[Refund]:
    """The refund: `review` asks, then `pay` (which a test may replace, to count its runs)."""
    builder = StateGraph(Refund)
    builder.add_node("review", review)
    builder.add_node("pay", pay)
    builder.add_edge(START, "review")
    builder.add_edge("review", "pay")
    builder.add_edge("pay", END)
    return builder


def thread(thread_id: str, **configurable: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id, **configurable}}


def record_langgraph_story(store: Workflows, prefix: str = "lg-") -> list[str]:
    """Real LangGraph threads on `store`: one approved and paid, one edited while paused
    and then approved, and one given new input while paused (its question superseded)."""
    graph = refund_builder().compile(checkpointer=HoldpointSaver(store, graph_id="refund-lg"))
    paid, edited, moved = f"{prefix}paid", f"{prefix}edited", f"{prefix}moved"
    graph.invoke({"amount": 120}, thread(paid))
    graph.invoke(Command(resume=True), thread(paid, decision="approve"))
    graph.invoke({"amount": 300}, thread(edited))
    graph.update_state(thread(edited), {"amount": 250})
    graph.invoke(Command(resume=True), thread(edited, decision="approve"))
    graph.invoke({"amount": 80}, thread(moved))
    graph.invoke({"amount": 90}, thread(moved))
    return [paid, edited, moved]


class Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def chat_builder() -> StateGraph[Chat]:
    """A chat turn: a fake chat model answers (streamed token by token when asked) and
    says so through the custom stream; a subgraph counts the turn."""

    def reply(state: Chat) -> dict[str, Any]:
        get_stream_writer()({"progress": "replying"})
        model = GenericFakeChatModel(messages=iter([AIMessage("hello there", id="ai-1")]))
        return {"messages": [model.invoke(state["messages"])]}

    def count(state: Chat) -> dict[str, Any]:
        return {"messages": [AIMessage(f"turn {len(state['messages'])}", id="count-1")]}

    counter = StateGraph(Chat)
    counter.add_node("count", count)
    counter.add_edge(START, "count")
    builder = StateGraph(Chat)
    builder.add_node("reply", reply)
    builder.add_node("counter", counter.compile())
    builder.add_edge(START, "reply")
    builder.add_edge("reply", "counter")
    builder.add_edge("counter", END)
    return builder


class ToolCallingModel(GenericFakeChatModel):
    """LangChain's fake chat model, which answers from a list, able to be given tools."""

    def bind_tools(self, tools: Any, **_: Any) -> Any:
        return self


REFUNDS: list[dict[str, Any]] = []  # what the refund tool was run with, by the tests


@tool
def issue_refund(customer: str, amount: int) -> str:
    """Refund a customer."""
    REFUNDS.append({"customer": customer, "amount": amount})
    return f"refunded {amount} to {customer}"


def refund_agent(mode: str = "batched") -> Any:
    """An agent (LangChain's create_agent) whose refunds a human reviews first
    (HumanInTheLoopMiddleware): the model proposes a refund of 500, then says it is done."""
    model = ToolCallingModel(
        messages=iter(
            [
                AIMessage(
                    "",
                    id="ai-1",
                    tool_calls=[
                        {
                            "name": "issue_refund",
                            "args": {"customer": "acme", "amount": 500},
                            "id": "call-1",
                        }
                    ],
                ),
                AIMessage("Done.", id="ai-2"),
            ]
        )
    )
    review = HumanInTheLoopMiddleware(
        interrupt_on={"issue_refund": {"allowed_decisions": ["approve", "edit", "reject"]}},
        description_prefix="Refund awaiting review",
        interrupt_mode=mode,
    )
    return create_agent(model, tools=[issue_refund], middleware=[review])
