"""Nodes that fail: one that hangs past the graph's step_timeout, one that
returns a value that is not JSON.

Either way the thread records NodeFailed with the cause, stays readable, and
can be run again (the node runs anew) or cancelled.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from domain.errors import InvalidUpdateError, NodeTimeoutError
from domain.graph import START, StateGraph
from domain.graph.compiled import CompiledStateGraph
from domain.record.thread import WorkflowThread
from tests.graphs import Refund

OPERATOR = {"id": "ops", "role": "admin"}


def config(thread_id: str = "t1") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}}


def hanging_graph(store: Any, release: threading.Event, hangs: list[bool]) -> CompiledStateGraph:
    """START -> pay; `pay` blocks until `release` while `hangs` says so."""

    def pay(state: Refund) -> dict[str, Any]:
        if hangs.pop(0):
            release.wait()
        return {"approved": True}

    builder = StateGraph(Refund)
    builder.add_node("pay", pay)
    builder.add_edge(START, "pay")
    graph = builder.compile(checkpointer=store)
    graph.step_timeout = 0.2
    return graph


def last_event(store: Any, thread_id: str = "t1") -> Any:
    return store.thread_events(thread_id)[-1]


@pytest.fixture
def release():
    event = threading.Event()
    yield event
    event.set()  # let an abandoned node finish


def test_a_node_past_the_step_timeout_is_recorded_as_node_failed(store, release):
    # Given a graph whose node hangs, with a 0.2 s step timeout
    graph = hanging_graph(store, release, [True])

    # When it runs
    with pytest.raises(NodeTimeoutError, match=r"'pay' ran longer than step_timeout=0\.2 s"):
        graph.invoke({"refund_amount": 5.0, "approved": None}, config())

    # Then NodeFailed names the node and the timeout, and the thread stays readable
    failed = last_event(store)
    assert isinstance(failed, WorkflowThread.NodeFailed)
    assert (failed.node, failed.error_type) == ("pay", "NodeTimeoutError")
    assert "step_timeout=0.2" in failed.message
    snapshot = graph.get_state(config())
    assert snapshot.next == ("pay",)
    assert snapshot.values == {"refund_amount": 5.0, "approved": None}


def test_a_timed_out_node_runs_again_when_the_thread_is_continued(store, release):
    # Given a node that timed out once
    graph = hanging_graph(store, release, [True, False])
    with pytest.raises(NodeTimeoutError):
        graph.invoke({"refund_amount": 5.0, "approved": None}, config())

    # When the thread is continued
    result = graph.invoke(None, config())

    # Then the node ran anew and the thread completed
    assert result == {"refund_amount": 5.0, "approved": True}
    names = [type(e).__name__ for e in store.thread_events("t1")]
    assert names[-3:] == ["NodeFailed", "NodeCompleted", "ThreadCompleted"]


def test_what_an_abandoned_node_returns_later_is_never_recorded(store, release):
    # Given a node that timed out
    graph = hanging_graph(store, release, [True])
    with pytest.raises(NodeTimeoutError):
        graph.invoke({"refund_amount": 5.0, "approved": None}, config())
    recorded = len(store.thread_events("t1"))

    # When the abandoned node finishes after all
    release.set()
    abandoned = [t for t in threading.enumerate() if t.name == "holdpoint-node-pay"]
    for thread in abandoned:
        thread.join(timeout=10)

    # Then nothing more was recorded
    assert len(store.thread_events("t1")) == recorded


def test_a_timed_out_thread_can_be_cancelled(store, release):
    graph = hanging_graph(store, release, [True])
    with pytest.raises(NodeTimeoutError):
        graph.invoke({"refund_amount": 5.0, "approved": None}, config())

    store.cancel("t1", OPERATOR, "payment provider hangs")

    assert isinstance(last_event(store), WorkflowThread.ThreadCancelled)


def test_an_async_node_past_the_step_timeout_is_recorded_as_node_failed(store):
    # Given an async node that never finishes by itself
    async def pay(state: Refund) -> dict[str, Any]:
        await asyncio.Event().wait()
        return {"approved": True}

    builder = StateGraph(Refund)
    builder.add_node("pay", pay)
    builder.add_edge(START, "pay")
    graph = builder.compile(checkpointer=store)
    graph.step_timeout = 0.2

    # When / Then
    with pytest.raises(NodeTimeoutError):
        asyncio.run(graph.ainvoke({"refund_amount": 5.0, "approved": None}, config()))
    failed = last_event(store)
    assert (type(failed).__name__, failed.error_type) == ("NodeFailed", "NodeTimeoutError")


def test_a_node_returning_a_value_that_is_not_json_is_recorded_as_node_failed(store):
    # Given a node that returns an object JSON cannot hold
    returns = [object(), True]

    def pay(state: Refund) -> dict[str, Any]:
        return {"approved": returns.pop(0)}

    builder = StateGraph(Refund)
    builder.add_node("pay", pay)
    builder.add_edge(START, "pay")
    graph = builder.compile(checkpointer=store)

    # When it runs
    with pytest.raises(InvalidUpdateError) as raised:
        graph.invoke({"refund_amount": 5.0, "approved": None}, config())

    # Then NodeFailed says what could not be stored, and a second try completes
    failed = last_event(store)
    assert isinstance(failed, WorkflowThread.NodeFailed)
    assert failed.error_type == type(raised.value).__name__
    assert "approved" in failed.message
    assert graph.get_state(config()).next == ("pay",)
    assert graph.invoke(None, config()) == {"refund_amount": 5.0, "approved": True}
