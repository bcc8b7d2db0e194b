"""`copy_thread`: given a real LangGraph graph's thread on HoldpointSaver, when it is
copied, then the copy reads every checkpoint the source had, under the same ids, goes on
by itself, and its record holds only ThreadForked (naming the source) and what happened
on it; a thread paused at a question, or one that does not exist, is not copied."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langgraph.types import Command

from domain.errors import ThreadExistsError, ThreadNotFoundError
from domain.history.forks import LangGraphForkError
from langgraph.checkpoint.holdpoint import HoldpointSaver
from tests.saver.langgraph_graphs import refund_builder, thread
from tests.saver.test_strict import kinds

AMY = {"id": "amy", "role": "agent"}
RITA = {"id": "rita", "role": "reviewer"}


def paid(saver: HoldpointSaver, thread_id: str = "t") -> Any:
    graph = refund_builder().compile(checkpointer=saver)
    graph.invoke({"amount": 150}, thread(thread_id, actor=AMY))
    graph.invoke(Command(resume=True), thread(thread_id, actor=RITA, decision="approve"))
    return graph


def history(graph: Any, thread_id: str) -> list[tuple[str, Any, tuple[str, ...]]]:
    return [
        (s.config["configurable"]["checkpoint_id"], s.values, s.next)
        for s in graph.get_state_history(thread(thread_id))
    ]


def test_a_copy_reads_every_checkpoint_of_its_source_and_records_only_its_start(store):
    saver = HoldpointSaver(store)
    graph = paid(saver)
    source_events = store.thread_events("t")

    saver.copy_thread("t", "copy")

    assert history(graph, "copy") == history(graph, "t")
    [forked] = store.thread_events("copy")
    assert type(forked).__name__ == "ThreadForked"
    assert (forked.source_thread_id, forked.source_version) == ("t", len(source_events))
    assert forked.source_hash == source_events[-1].event_hash
    assert store.thread_events("t") == source_events
    assert store.verify_chain("copy").ok


def test_a_copy_goes_on_by_itself_under_the_hold_points(store):
    saver = HoldpointSaver(store)
    graph = paid(saver)
    saver.copy_thread("t", "copy")
    source_events = store.thread_events("t")

    # When the copy is given new input, it pauses at its own question, and goes on
    # once a reviewer answers it there
    paused = graph.invoke({"amount": 40}, thread("copy", actor=AMY))
    assert [i.value["amount"] for i in paused["__interrupt__"]] == [40]
    assert [e.value["amount"] for e in kinds(store, "copy", "InterruptRaised")] == [40]
    done = graph.invoke(Command(resume=True), thread("copy", actor=RITA, decision="approve"))

    assert done["log"] == ["reviewed: True", "paid 150", "reviewed: True", "paid 40"]
    assert [e.actor["id"] for e in kinds(store, "copy", "InterruptResumed")] == ["rita"]
    assert store.thread_events("t") == source_events
    assert graph.get_state(thread("t")).values["log"] == ["reviewed: True", "paid 150"]


def test_a_copy_travels_in_time_to_its_sources_checkpoints(store):
    saver = HoldpointSaver(store)
    graph = paid(saver)
    saver.copy_thread("t", "copy")
    before_pay = next(s for s in graph.get_state_history(thread("copy")) if s.next == ("pay",))

    # When the copy is edited at a checkpoint it took from the source, and run from there
    edited = graph.update_state(before_pay.config, {"amount": 99})
    result = graph.invoke(None, edited)

    assert result["log"] == ["reviewed: True", "paid 99"]
    assert graph.get_state(thread("t")).values["amount"] == 150
    assert [e.values["amount"] for e in kinds(store, "copy", "StateEdited")] == [99]


def test_a_copy_of_a_copy_reads_back_to_the_first(store):
    saver = HoldpointSaver(store)
    graph = paid(saver)
    saver.copy_thread("t", "copy")
    graph.invoke({"amount": 40}, thread("copy", actor=AMY))
    graph.invoke(Command(resume=False), thread("copy", actor=RITA, decision="reject"))

    saver.copy_thread("copy", "copy2")

    assert history(graph, "copy2") == history(graph, "copy")
    assert len(history(graph, "copy2")) > len(history(graph, "t"))
    [latest] = saver.list(thread("copy2"), limit=1)
    head = saver.get_tuple(thread("copy"))
    assert head is not None
    assert latest.checkpoint["id"] == head.checkpoint["id"]


def test_a_thread_paused_at_its_question_is_not_copied(store):
    saver = HoldpointSaver(store)
    refund_builder().compile(checkpointer=saver).invoke({"amount": 150}, thread("t", actor=AMY))
    head = store.recorder.max_notification_id()

    with pytest.raises(LangGraphForkError, match="was interrupted at version"):
        saver.copy_thread("t", "copy")

    assert store.recorder.max_notification_id() == head
    assert saver.get_tuple(thread("copy")) is None


@pytest.mark.parametrize(
    ("source", "target", "error"),
    [("nowhere", "copy", ThreadNotFoundError), ("t", "t", ThreadExistsError)],
    ids=["unknown source", "target exists"],
)
def test_a_copy_needs_a_source_and_a_new_target(store, source, target, error):
    saver = HoldpointSaver(store)
    paid(saver)
    head = store.recorder.max_notification_id()

    with pytest.raises(error):
        saver.copy_thread(source, target)

    assert store.recorder.max_notification_id() == head


def test_the_async_copy_copies_the_same(store):
    saver = HoldpointSaver(store)
    graph = paid(saver)

    asyncio.run(saver.acopy_thread("t", "copy"))

    assert history(graph, "copy") == history(graph, "t")
