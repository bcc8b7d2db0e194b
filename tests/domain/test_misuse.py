"""Strict misuse: each mistake raises its own error and records nothing.

Where LangGraph is lenient (anchors/langgraph_semantics.md section 5),
Holdpoint refuses, because a silently dropped decision is an audit failure.
Every test compares the thread's stored events, as (type, version, hash),
before and after the mistake.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest

from domain.errors import (
    AmbiguousResumeError,
    EmptyInputError,
    InvalidUpdateError,
    MissingThreadIdError,
    NoCheckpointerError,
    NotInterruptedError,
    ThreadInterruptedError,
    ThreadNotFoundError,
    UnknownInterruptError,
)
from domain.graph import START, StateGraph
from domain.graph.compiled import CompiledStateGraph
from domain.record.application import Workflows
from domain.types import Command
from tests.graphs import Refund, parallel_interrupts_graph, process_refund, refund_graph


class Out(TypedDict):
    out: Annotated[list, operator.add]
    winner: str


def racing_writers_graph(store: Workflows) -> CompiledStateGraph:
    builder = StateGraph(Out)
    builder.add_node("a", lambda s: {"winner": "a"})
    builder.add_node("b", lambda s: {"winner": "b"})
    builder.add_edge(START, "a")
    builder.add_edge(START, "b")
    return builder.compile(checkpointer=store)


def config(thread_id: str, **configurable: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id, **configurable}}


def recorded(store: Workflows, thread_id: str) -> list[tuple[str, int, str]]:
    return [
        (type(e).__name__, e.originator_version, e.event_hash)
        for e in store.thread_events(thread_id)
    ]


def paused(store: Workflows, thread_id: str = "t1") -> CompiledStateGraph:
    graph = refund_graph(store)
    graph.invoke({"refund_amount": 250.0, "approved": False}, config(thread_id))
    return graph


def finished(store: Workflows, thread_id: str = "t1") -> CompiledStateGraph:
    graph = paused(store, thread_id)
    graph.invoke(Command(resume=True), config(thread_id))
    return graph


# -- resumes ----------------------------------------------------------------


def test_resuming_an_unknown_thread_raises_thread_not_found_and_records_nothing(store):
    # Given
    graph = refund_graph(store)

    # When / Then
    with pytest.raises(ThreadNotFoundError):
        graph.invoke(Command(resume=True), config("never-seen"))
    assert recorded(store, "never-seen") == []
    assert store.thread("never-seen") is None


def test_resuming_a_finished_thread_raises_not_interrupted_and_records_nothing(store):
    # Given
    graph = finished(store)
    before = recorded(store, "t1")

    # When / Then
    with pytest.raises(NotInterruptedError):
        graph.invoke(Command(resume=False), config("t1"))
    assert recorded(store, "t1") == before


def test_resuming_a_thread_stopped_by_a_node_error_raises_not_interrupted(store):
    # Given
    def broken(state: Refund) -> dict[str, Any]:
        raise ValueError("boom")

    builder = StateGraph(Refund)
    builder.add_node("broken", broken)
    builder.add_edge(START, "broken")
    graph = builder.compile(checkpointer=store)
    with pytest.raises(ValueError, match="boom"):
        graph.invoke({"refund_amount": 1.0, "approved": False}, config("t1"))
    before = recorded(store, "t1")

    # When / Then
    with pytest.raises(NotInterruptedError):
        graph.invoke(Command(resume=True), config("t1"))
    assert recorded(store, "t1") == before


def test_resuming_by_an_id_that_is_not_pending_raises_unknown_interrupt(store):
    # Given
    graph = paused(store)
    before = recorded(store, "t1")

    # When / Then
    with pytest.raises(UnknownInterruptError):
        graph.invoke(Command(resume={"0" * 32: True}), config("t1"))
    assert recorded(store, "t1") == before


def test_resuming_by_an_id_that_was_already_answered_raises_unknown_interrupt(store):
    # Given
    graph = refund_graph(store)
    result = graph.invoke({"refund_amount": 1.0, "approved": False}, config("t1"))
    old_id = result["__interrupt__"][0].id
    graph.invoke(Command(resume=True), config("t1"))
    graph.invoke({"refund_amount": 2.0, "approved": False}, config("t1"))
    before = recorded(store, "t1")

    # When / Then
    with pytest.raises(UnknownInterruptError):
        graph.invoke(Command(resume={old_id: True}), config("t1"))
    assert recorded(store, "t1") == before


def test_a_map_naming_one_pending_and_one_unknown_id_records_neither(store):
    # Given
    graph = parallel_interrupts_graph(store, join=False)
    result = graph.invoke({"out": []}, config("p1"))
    known = result["__interrupt__"][0].id
    before = recorded(store, "p1")

    # When / Then
    with pytest.raises(UnknownInterruptError):
        graph.invoke(Command(resume={known: "yes", "f" * 32: "no"}), config("p1"))
    assert recorded(store, "p1") == before


def test_a_single_value_while_two_interrupts_are_pending_raises_ambiguous_resume(store):
    # Given
    graph = parallel_interrupts_graph(store, join=False)
    graph.invoke({"out": []}, config("p1"))
    before = recorded(store, "p1")

    # When / Then
    with pytest.raises(AmbiguousResumeError):
        graph.invoke(Command(resume="single"), config("p1"))
    assert recorded(store, "p1") == before


def test_a_resume_with_an_unknown_decision_is_refused_and_records_nothing(store):
    # Given
    graph = paused(store)
    before = recorded(store, "t1")

    # When / Then
    with pytest.raises(InvalidUpdateError):
        graph.invoke(Command(resume=True), config("t1", decision="maybe"))
    assert recorded(store, "t1") == before


# -- new input and continuing ---------------------------------------------


def test_new_input_on_a_paused_thread_raises_thread_interrupted_and_records_nothing(store):
    # Given
    graph = paused(store)
    before = recorded(store, "t1")

    # When / Then
    with pytest.raises(ThreadInterruptedError):
        graph.invoke({"refund_amount": 7.0, "approved": False}, config("t1"))
    assert recorded(store, "t1") == before


def test_the_pending_interrupt_survives_refused_new_input(store):
    # Given
    graph = paused(store)
    pending = graph.get_state(config("t1")).interrupts

    # When
    with pytest.raises(ThreadInterruptedError):
        graph.invoke({"refund_amount": 7.0, "approved": False}, config("t1"))

    # Then
    assert graph.get_state(config("t1")).interrupts == pending
    assert graph.invoke(Command(resume=True), config("t1"))["approved"] is True


def test_continuing_an_unknown_thread_raises_empty_input_and_records_nothing(store):
    # Given
    graph = refund_graph(store)

    # When / Then
    with pytest.raises(EmptyInputError):
        graph.invoke(None, config("nada"))
    assert recorded(store, "nada") == []


# -- no thread id ----------------------------------------------------------


@pytest.mark.parametrize(
    "bad_config",
    [None, {}, {"configurable": {}}, {"configurable": {"thread_id": ""}}],
    ids=["no-config", "empty-config", "empty-configurable", "empty-thread-id"],
)
def test_a_run_without_a_thread_id_raises_missing_thread_id_and_records_nothing(store, bad_config):
    # Given
    graph = refund_graph(store)
    position = store.recorder.max_notification_id()

    # When / Then
    with pytest.raises(MissingThreadIdError):
        graph.invoke({"refund_amount": 1.0, "approved": False}, bad_config)
    assert store.recorder.max_notification_id() == position


def test_reading_or_editing_without_a_thread_id_raises_missing_thread_id(store):
    # Given
    graph = refund_graph(store)
    position = store.recorder.max_notification_id()

    # When / Then
    with pytest.raises(MissingThreadIdError):
        graph.get_state({"configurable": {}})
    with pytest.raises(MissingThreadIdError):
        list(graph.get_state_history({"configurable": {}}))
    with pytest.raises(MissingThreadIdError):
        graph.update_state({"configurable": {}}, {"approved": True})
    assert store.recorder.max_notification_id() == position


# -- no checkpointer --------------------------------------------------------


def test_interrupt_without_a_checkpointer_raises_no_checkpointer_out_of_invoke():
    # Given
    graph = refund_graph(None)

    # When / Then
    with pytest.raises(NoCheckpointerError):
        graph.invoke({"refund_amount": 1.0, "approved": False})


def test_a_graph_without_interrupts_runs_without_a_checkpointer():
    # Given
    builder = StateGraph(Refund)
    builder.add_node("process_refund", process_refund)
    builder.add_edge(START, "process_refund")
    graph = builder.compile()

    # When
    result = graph.invoke({"refund_amount": 1.0, "approved": True})

    # Then
    assert result == {"refund_amount": 1.0, "approved": True}


def test_resume_without_a_checkpointer_raises_no_checkpointer():
    # Given
    graph = refund_graph(None)

    # When / Then
    with pytest.raises(NoCheckpointerError):
        graph.invoke(Command(resume=True))


def test_get_state_without_a_checkpointer_raises_no_checkpointer():
    # Given
    graph = refund_graph(None)

    # When / Then
    with pytest.raises(NoCheckpointerError):
        graph.get_state(config("a"))


def test_get_state_history_without_a_checkpointer_raises_no_checkpointer():
    # Given
    graph = refund_graph(None)

    # When / Then
    with pytest.raises(NoCheckpointerError):
        list(graph.get_state_history(config("a")))


def test_update_state_without_a_checkpointer_raises_no_checkpointer():
    # Given
    graph = refund_graph(None)

    # When / Then
    with pytest.raises(NoCheckpointerError):
        graph.update_state(config("a"), {"approved": True})


# -- bad updates -----------------------------------------------------------


def test_update_state_as_an_unknown_node_raises_invalid_update_and_records_nothing(store):
    # Given
    graph = paused(store)
    before = recorded(store, "t1")

    # When / Then
    with pytest.raises(InvalidUpdateError, match="ghost"):
        graph.update_state(config("t1"), {"approved": True}, as_node="ghost")
    assert recorded(store, "t1") == before


def test_update_state_as_end_says_it_is_a_cancellation_and_records_nothing(store):
    # Given a thread paused at a hold point
    graph = paused(store)
    before = recorded(store, "t1")

    # When / Then: ending it where it stands is the store's cancel, with an actor
    with pytest.raises(InvalidUpdateError, match=r"__end__ .* cancel\(thread_id, actor"):
        graph.update_state(config("t1"), None, as_node="__end__")
    assert recorded(store, "t1") == before


def test_two_nodes_writing_one_last_value_key_in_a_step_raise_invalid_update(store):
    # Given
    graph = racing_writers_graph(store)

    # When / Then
    with pytest.raises(InvalidUpdateError, match="winner"):
        graph.invoke({"out": []}, config("w1"))

    # Then: only the input's commit is stored; the conflicting step recorded nothing
    assert [name for name, _, _ in recorded(store, "w1")] == [
        "ThreadStarted",
        "InputReceived",
        "NodeCompleted",
    ]


def test_continuing_after_conflicting_writes_raises_again_and_records_nothing(store):
    # Given
    graph = racing_writers_graph(store)
    with pytest.raises(InvalidUpdateError):
        graph.invoke({"out": []}, config("w1"))
    before = recorded(store, "w1")

    # When / Then
    with pytest.raises(InvalidUpdateError):
        graph.invoke(None, config("w1"))
    assert recorded(store, "w1") == before
