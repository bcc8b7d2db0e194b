"""The stop button on a real LangGraph graph: given a run on HoldpointSaver whose node is
running, when another writer cancels the thread (ThreadCancelled, as `POST
/threads/{id}/cancel` records it), then the node's outcome is recorded after the stop,
the run goes no further (LangGraph's next checkpoint is refused), and the record never
says the thread completed; a new run of it is refused."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.graph import END, START, StateGraph

from domain.errors import ThreadCancelledError
from langgraph.checkpoint.holdpoint import HoldpointSaver
from tests.saver.langgraph_graphs import Refund, thread

STOPPER = {"id": "ops", "role": "admin"}


def stopped_while_paying(saver: HoldpointSaver, ran: list[str], *, last: bool = False) -> Any:
    """START -> pay -> notify (or pay alone, `last`): `pay` is stopped while it runs."""

    def pay(state: Refund) -> dict[str, Any]:
        ran.append("pay")
        saver.store.cancel("t", STOPPER, "Stop: wrong customer")
        return {"log": [f"paid {state['amount']}"]}

    def notify(state: Refund) -> dict[str, Any]:
        ran.append("notify")
        return {"log": ["notified"]}

    builder = StateGraph(Refund)
    builder.add_node("pay", pay)
    builder.add_edge(START, "pay")
    if last:
        builder.add_edge("pay", END)
    else:
        builder.add_node("notify", notify)
        builder.add_edge("pay", "notify")
        builder.add_edge("notify", END)
    return builder.compile(checkpointer=saver)


def recorded(saver: HoldpointSaver) -> list[tuple[str, str | None]]:
    return [(type(e).__name__, getattr(e, "node", None)) for e in saver.store.thread_events("t")]


def test_a_stop_while_a_node_runs_records_its_outcome_and_runs_nothing_after(store):
    # Given
    saver, ran = HoldpointSaver(store), []
    graph = stopped_while_paying(saver, ran)

    # When / Then
    with pytest.raises(ThreadCancelledError):
        graph.invoke({"amount": 150, "log": []}, thread("t"), durability="sync")
    events = recorded(saver)
    stop = events.index(("ThreadCancelled", None))
    assert ("NodeCompleted", "pay") in events[stop:]  # it ran: the record says so
    assert ran == ["pay"]
    assert ("ThreadCompleted", None) not in events
    with pytest.raises(ThreadCancelledError):  # and nothing runs it on
        graph.invoke(None, thread("t"))
    assert ran == ["pay"]


def test_a_stop_while_the_last_node_runs_records_it_and_no_completion(store):
    # Given
    saver, ran = HoldpointSaver(store), []
    graph = stopped_while_paying(saver, ran, last=True)

    # When
    graph.invoke({"amount": 150, "log": []}, thread("t"), durability="sync")

    # Then
    events = recorded(saver)
    assert events.index(("ThreadCancelled", None)) < events.index(("NodeCompleted", "pay"))
    assert ("ThreadCompleted", None) not in events
    assert graph.get_state(thread("t")).values["log"] == ["paid 150"]


def test_new_input_on_a_stopped_thread_is_refused_recording_nothing(store):
    # Given a stopped thread
    saver, ran = HoldpointSaver(store), []
    graph = stopped_while_paying(saver, ran, last=True)
    graph.invoke({"amount": 150, "log": []}, thread("t"), durability="sync")
    before = len(saver.store.thread_events("t"))

    # When / Then
    with pytest.raises(ThreadCancelledError):
        graph.invoke({"amount": 90, "log": []}, thread("t"))
    assert len(saver.store.thread_events("t")) == before
    assert ran == ["pay"]


def test_a_copy_of_a_stopped_thread_is_refused_recording_nothing(store):
    # Given a stopped thread
    saver, ran = HoldpointSaver(store), []
    graph = stopped_while_paying(saver, ran, last=True)
    graph.invoke({"amount": 150, "log": []}, thread("t"), durability="sync")

    # When / Then a copy, which would run on where the stop stopped it, is refused
    with pytest.raises(ThreadCancelledError):
        saver.copy_thread("t", "copy")
    assert saver.store.thread("copy") is None
