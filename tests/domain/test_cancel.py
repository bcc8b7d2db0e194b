"""Cancelling a thread: the Article 14(4)(e) stop button."""

import operator
from typing import Annotated, TypedDict

import pytest

from domain.errors import ReasonRequiredError, ThreadCancelledError, ThreadNotFoundError
from domain.graph import END, START, StateGraph
from domain.history.forks import fork_at_version
from domain.record.thread import WorkflowThread
from domain.types import Command, interrupt

REVIEWER = {"id": "rita", "role": "reviewer", "authenticated": True, "via": "test"}


class State(TypedDict):
    log: Annotated[list, operator.add]


def ask(state: State) -> dict:
    return {"log": [interrupt("go ahead?")]}


def paused_graph(store):
    builder = StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    graph = builder.compile(checkpointer=store)
    graph.invoke({"log": []}, {"configurable": {"thread_id": "t"}})
    return graph


def stored(store):
    return [(type(e).__name__, e.originator_version) for e in store.thread_events("t")]


def test_cancelling_a_paused_thread_withdraws_its_interrupts(store):
    # Given a thread paused at an interrupt
    graph = paused_graph(store)
    # When a reviewer cancels it with a reason
    store.cancel("t", REVIEWER, "customer withdrew the request")
    # Then ThreadCancelled records who and why, and nothing is pending
    last = store.thread_events("t")[-1]
    assert isinstance(last, WorkflowThread.ThreadCancelled)
    assert (last.actor["id"], last.reason) == ("rita", "customer withdrew the request")
    snapshot = graph.get_state({"configurable": {"thread_id": "t"}})
    assert snapshot.interrupts == ()
    assert store.thread("t").status == "cancelled"


def test_a_cancelled_thread_cannot_be_resumed_or_cancelled_again(store):
    graph = paused_graph(store)
    store.cancel("t", REVIEWER, "duplicate")
    before = stored(store)
    with pytest.raises(ThreadCancelledError):
        graph.invoke(Command(resume=True), {"configurable": {"thread_id": "t"}})
    with pytest.raises(ThreadCancelledError):
        store.cancel("t", REVIEWER, "again")
    with pytest.raises(ThreadCancelledError):
        graph.update_state({"configurable": {"thread_id": "t"}}, {"log": ["x"]})
    assert stored(store) == before


@pytest.mark.parametrize("reason", [None, "", "   "])
def test_a_stop_without_a_reason_is_refused_and_records_nothing(store, reason):
    paused_graph(store)
    before = stored(store)
    with pytest.raises(ReasonRequiredError, match="needs a reason"):
        store.cancel("t", REVIEWER, reason)
    assert stored(store) == before
    assert store.thread("t").status == "interrupted"


def test_cancelling_an_unknown_thread_is_an_error(store):
    with pytest.raises(ThreadNotFoundError):
        store.cancel("nope", REVIEWER, "stop")
    assert store.thread("nope") is None


def test_a_stopped_thread_is_not_copied_but_may_be_forked_from_before_the_stop(store):
    # Given a thread paused at an interrupt, then stopped
    graph = paused_graph(store)
    paused_at = store.thread("t").version
    store.cancel("t", REVIEWER, "Wrong customer")
    head = store.thread("t").version

    # When / Then a copy (a fork at the head) is refused, recording nothing
    with pytest.raises(ThreadCancelledError):
        fork_at_version(store, "t", head, REVIEWER, "copy")
    assert store.thread("copy") is None
    # and a fork from before the stop asks the question again, as any fork does
    forked = fork_at_version(store, "t", paused_at, REVIEWER, "before")
    assert graph.get_state({"configurable": {"thread_id": forked.thread_id}}).next == ("ask",)
