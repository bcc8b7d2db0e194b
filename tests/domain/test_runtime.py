"""Running graphs: the recursion limit, and nodes that raise.

anchors/langgraph_semantics.md section 10 (recursion limit, ported from p5);
a failed node is recorded as NodeFailed and runs again on invoke(None).
"""

from __future__ import annotations

from typing import Any

import pytest

from domain.errors import GraphRecursionError
from domain.graph import START, StateGraph
from domain.graph.compiled import CompiledStateGraph
from domain.record.application import Workflows
from domain.record.thread import WorkflowThread
from tests.graphs import Log, Refund, appender, counter_loop_graph


def config(thread_id: str = "g1", **extra: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}, **extra}


def events_of(store: Workflows, thread_id: str = "g1") -> list[WorkflowThread.Event]:
    return store.thread_events(thread_id)


# -- recursion limit --------------------------------------------------------------


def test_a_loop_beyond_the_recursion_limit_raises_graph_recursion_error(store):
    # Given
    graph = counter_loop_graph(store)

    # When / Then
    with pytest.raises(GraphRecursionError, match="Recursion limit of 10 reached"):
        graph.invoke({"n": 0}, config(recursion_limit=10))


def test_the_recursion_limit_leaves_the_thread_at_its_last_step_with_thread_failed(store):
    # Given
    graph = counter_loop_graph(store)

    # When
    with pytest.raises(GraphRecursionError):
        graph.invoke({"n": 0}, config(recursion_limit=10))

    # Then
    snapshot = graph.get_state(config())
    assert snapshot.values == {"n": 10}
    assert snapshot.next == ("inc",)
    failed = events_of(store)[-1]
    assert isinstance(failed, WorkflowThread.ThreadFailed)
    assert failed.error_type == "GraphRecursionError"


def test_a_thread_stopped_by_the_recursion_limit_continues_with_a_higher_limit(store):
    # Given
    graph = counter_loop_graph(store)
    with pytest.raises(GraphRecursionError):
        graph.invoke({"n": 0}, config(recursion_limit=10))

    # When
    result = graph.invoke(None, config(recursion_limit=200))

    # Then
    assert result == {"n": 100}
    assert isinstance(events_of(store)[-1], WorkflowThread.ThreadCompleted)


def test_the_default_recursion_limit_lets_a_hundred_step_loop_finish(store):
    # Given
    graph = counter_loop_graph(store)

    # When
    result = graph.invoke({"n": 0}, config())

    # Then
    assert result == {"n": 100}


# -- node errors -----------------------------------------------------------------


def flaky_graph(store: Workflows, failures: list[str]) -> CompiledStateGraph:
    def flaky(state: Refund) -> dict[str, Any]:
        if failures:
            raise ValueError(failures.pop())
        return {"approved": True}

    builder = StateGraph(Refund)
    builder.add_node("flaky", flaky)
    builder.add_edge(START, "flaky")
    return builder.compile(checkpointer=store)


def test_a_node_exception_propagates_out_of_invoke(store):
    # Given
    graph = flaky_graph(store, ["payment service down"])

    # When / Then
    with pytest.raises(ValueError, match="payment service down"):
        graph.invoke({"refund_amount": 1.0, "approved": False}, config())


def test_a_node_exception_is_recorded_as_node_failed(store):
    # Given
    graph = flaky_graph(store, ["payment service down"])

    # When
    with pytest.raises(ValueError, match="payment service down"):
        graph.invoke({"refund_amount": 1.0, "approved": False}, config())

    # Then
    failed = events_of(store)[-1]
    assert isinstance(failed, WorkflowThread.NodeFailed)
    assert (failed.step, failed.node) == (1, "flaky")
    assert failed.error_type == "ValueError"
    assert failed.message == "payment service down"
    snapshot = graph.get_state(config())
    assert snapshot.next == ("flaky",)
    assert snapshot.tasks[0].error is not None


def test_continuing_after_a_node_exception_runs_the_failed_node_again(store):
    # Given
    graph = flaky_graph(store, ["payment service down"])
    with pytest.raises(ValueError, match="payment service down"):
        graph.invoke({"refund_amount": 1.0, "approved": False}, config())

    # When
    result = graph.invoke(None, config())

    # Then
    assert result == {"refund_amount": 1.0, "approved": True}
    names = [type(e).__name__ for e in events_of(store)]
    assert names[-3:] == ["NodeFailed", "NodeCompleted", "ThreadCompleted"]


def test_a_failing_node_does_not_lose_the_updates_of_its_sibling(store):
    # Given
    def boom(state: Log) -> dict[str, Any]:
        raise RuntimeError("boom")

    builder = StateGraph(Log)
    builder.add_node("fine", appender("fine"))
    builder.add_node("boom", boom)
    builder.add_edge(START, "fine")
    builder.add_edge(START, "boom")
    graph = builder.compile(checkpointer=store)

    # When
    with pytest.raises(RuntimeError, match="boom"):
        graph.invoke({"log": []}, config())

    # Then
    recorded = [(type(e).__name__, getattr(e, "node", None)) for e in events_of(store)]
    assert ("NodeCompleted", "fine") in recorded
    assert ("NodeFailed", "boom") in recorded
