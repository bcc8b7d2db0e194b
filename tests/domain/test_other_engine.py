"""A thread goes on only on the engine that recorded it: the native engine (domain.graph)
and real LangGraph graphs (HoldpointSaver) refuse each other's threads, naming the
thread and why, before they write anything. Before this rule the native engine recorded
a reviewer's answer on a LangGraph thread and then failed (TypeError), leaving it
running with its question consumed; LangGraph took a native thread for a new one."""

from __future__ import annotations

import re
from typing import Any, TypedDict

import pytest
from langgraph.types import Command as LangGraphCommand

from domain.errors import OtherEngineError
from domain.record.application import Workflows
from domain.types import Command, interrupt
from langgraph.checkpoint.holdpoint import HoldpointSaver
from tests.graphs import linear_graph
from tests.saver.langgraph_graphs import refund_builder

REVIEWER = {"id": "rita", "role": "reviewer"}
LANGGRAPHS = re.escape(
    "Thread 't' is a real LangGraph graph's (HoldpointSaver): the native engine cannot"
)
NATIVES = re.escape(
    "Thread 't' is a native Holdpoint graph's (domain.graph): a LangGraph graph cannot"
)


class Refund(TypedDict):
    amount: int
    approved: Any


def review(state: Refund) -> dict[str, Any]:
    return {"approved": interrupt({"question": "Approve?", "amount": state["amount"]})}


def pay(state: Refund) -> dict[str, Any]:
    return {}


def config(**configurable: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": "t", **configurable}}


def native(store: Workflows) -> Any:
    return linear_graph(store, Refund, review, pay, name="refund")


def langgraph(store: Workflows) -> Any:
    return refund_builder().compile(checkpointer=HoldpointSaver(store, graph_id="refund"))


def head(store: Workflows) -> int | None:
    return store.recorder.max_notification_id()


@pytest.mark.parametrize(
    "go_on",
    [
        lambda graph: graph.invoke(Command(resume=True), config(actor=REVIEWER)),
        lambda graph: graph.invoke({"amount": 5, "approved": None}, config()),
        lambda graph: graph.invoke(None, config()),
        lambda graph: graph.update_state(config(), {"amount": 1}),
    ],
    ids=["resume", "input", "continue", "update_state"],
)
def test_the_native_engine_refuses_a_langgraph_thread_and_writes_nothing(store, go_on):
    # Given a real LangGraph graph's thread, paused at its question
    langgraph(store).invoke({"amount": 300}, config())
    before = head(store)

    # When the native engine is asked to go on with it / Then
    with pytest.raises(OtherEngineError, match=LANGGRAPHS):
        go_on(native(store))
    assert head(store) == before
    assert store.thread("t").status == "interrupted"


@pytest.mark.parametrize(
    "go_on",
    [
        lambda graph: graph.invoke(LangGraphCommand(resume=True), config()),
        lambda graph: graph.invoke({"amount": 5}, config()),
        lambda graph: graph.get_state(config()),
        lambda graph: graph.update_state(config(), {"amount": 1}),
        lambda graph: graph.checkpointer.copy_thread("t", "copy"),
    ],
    ids=["resume", "input", "get_state", "update_state", "copy_thread"],
)
def test_a_langgraph_graph_refuses_a_native_thread_and_writes_nothing(store, go_on):
    # Given a native graph's thread, paused at its question
    native(store).invoke({"amount": 300, "approved": None}, config())
    before = head(store)

    # When a real LangGraph graph on HoldpointSaver is asked to go on with it / Then
    with pytest.raises(OtherEngineError, match=NATIVES):
        go_on(langgraph(store))
    assert head(store) == before
    assert store.thread("t").status == "interrupted"
