"""Running graphs: the recursion limit, and nodes that raise.

anchors/langgraph_semantics.md section 10 (recursion limit, ported from p5);
a failed node is recorded as NodeFailed and runs again on invoke(None).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from domain.errors import ConcurrentUpdateError, GraphRecursionError, ThreadCancelledError
from domain.graph import START, StateGraph
from domain.graph.compiled import CompiledStateGraph
from domain.record.application import Workflows
from domain.record.thread import WorkflowThread
from domain.types import Command, interrupt
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


# -- another writer while a node runs --------------------------------------------

OTHER = {"id": "ops", "role": "agent"}


def graph_whose_node_meanwhile(
    store: Workflows, meanwhile: Callable[[], Any], runs: list[str]
) -> CompiledStateGraph:
    """START -> work -> END; `work` lets another writer write to the thread (`meanwhile`)
    while it runs, as a request from another client would."""

    def work(state: Log) -> dict[str, Any]:
        runs.append("work")
        meanwhile()
        return {"log": ["worked"]}

    builder = StateGraph(Log)
    builder.add_node("work", work)
    builder.add_edge(START, "work")
    return builder.compile(checkpointer=store)


def test_a_step_is_recorded_after_metadata_another_writer_set_while_its_node_ran(store):
    # Given a node during which another writer sets the thread's metadata
    runs: list[str] = []
    meanwhile = lambda: store.update_metadata("g1", {"ticket": "T-7"}, OTHER)  # noqa: E731
    graph = graph_whose_node_meanwhile(store, meanwhile, runs)

    # When
    result = graph.invoke({"log": []}, config())

    # Then the step is on record after it, once, and the thread is done
    assert result["log"] == ["worked"]
    assert runs == ["work"]
    names = [type(e).__name__ for e in events_of(store)]
    assert names[-3:] == ["MetadataUpdated", "NodeCompleted", "ThreadCompleted"]
    thread = store.thread("g1")
    assert thread is not None
    assert thread.metadata["ticket"] == "T-7"
    assert graph.get_state(config()).next == ()


def name_a_reviewer(store: Workflows, interrupt_id: str) -> None:
    store.assign("g1", interrupt_id, "reviewer-2", OTHER)


def let_its_deadline_pass(store: Workflows, interrupt_id: str) -> None:
    assert store.expire("g1", interrupt_id, datetime.now(UTC) + timedelta(hours=1))


@pytest.mark.parametrize(
    ("meanwhile", "recorded", "right"),
    [
        (name_a_reviewer, "InterruptAssigned", []),
        (let_its_deadline_pass, "InterruptExpired", ["right=False"]),  # its rule: reject
    ],
)
def test_a_step_is_recorded_after_another_writer_touched_a_question_still_open(
    store, meanwhile, recorded, right
):
    # Given two questions, the right one with a deadline; the answer to the left one runs
    # its node again, during which another writer names a reviewer for the right one,
    # or the right one's deadline passes
    runs: list[str] = []

    def ask(side: str) -> Callable[[Log], dict[str, Any]]:
        def node(state: Log) -> dict[str, Any]:
            runs.append(side)
            answer = interrupt(f"ask {side}", deadline=60 if side == "right" else None)
            if side == "left":
                thread = store.thread("g1")
                assert thread is not None
                (other,) = [i for i, asked in thread.interrupts.items() if asked["node"] == "right"]
                meanwhile(store, other)
            return {"log": [f"{side}={answer}"]}

        node.__name__ = side
        return node

    builder = StateGraph(Log)
    for side in ("left", "right"):
        builder.add_node(side, ask(side))
        builder.add_edge(START, side)
    graph = builder.compile(checkpointer=store)
    paused = graph.invoke({"log": []}, config())
    left = next(i.id for i in paused["__interrupt__"] if i.value == "ask left")

    # When
    graph.invoke(Command(resume={left: "yes"}), config())

    # Then the answered node's outcome is on record after the other writer's event, once
    events = [(type(e).__name__, getattr(e, "node", None)) for e in events_of(store)]
    at = events.index((recorded, None))
    assert events[at + 1] == ("NodeCompleted", "left")
    assert runs.count("left") == 2  # asked, then answered: no third run
    assert graph.get_state(config()).values["log"] == ["left=yes", *right]


def test_the_stop_button_pressed_while_a_node_runs_records_its_step_and_runs_nothing_after(
    store,
):
    # Given START -> work -> after, and a stop (a cancel) pressed while `work` runs
    runs: list[str] = []

    def work(state: Log) -> dict[str, Any]:
        runs.append("work")
        store.cancel("g1", OTHER, "Stop: wrong customer")
        return {"log": ["worked"]}

    builder = StateGraph(Log)
    builder.add_node("work", work)
    builder.add_node("after", appender("after"))
    builder.add_edge(START, "work")
    builder.add_edge("work", "after")
    graph = builder.compile(checkpointer=store)

    # When / Then the run stops: `work`, which ran, is on record after the stop, and
    # `after` never runs
    with pytest.raises(ThreadCancelledError):
        graph.invoke({"log": []}, config())
    recorded = [(type(e).__name__, getattr(e, "node", None)) for e in events_of(store)]
    assert recorded[-2:] == [("ThreadCancelled", None), ("NodeCompleted", "work")]
    assert runs == ["work"]
    assert graph.get_state(config()).values["log"] == ["worked"]


def test_a_step_is_refused_when_another_writer_edited_the_state_while_its_node_ran(store):
    # Given a node during which another writer edits the state
    runs: list[str] = []

    def edit() -> None:
        graph.update_state(config(), {"last": "edited"})

    graph = graph_whose_node_meanwhile(store, edit, runs)

    # When / Then the step is refused, nothing of it recorded: the edit stands
    with pytest.raises(ConcurrentUpdateError):
        graph.invoke({"log": []}, config())
    recorded = [(type(e).__name__, getattr(e, "node", None)) for e in events_of(store)]
    assert recorded[-1][0] == "StateEdited"
    assert ("NodeCompleted", "work") not in recorded
    assert runs == ["work"]
