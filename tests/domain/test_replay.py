"""Replay: today's node code against a thread's record, step by step, writing nothing.

A review graph is recorded with one version of its code, then replayed with
another: each kind of drift (another update, another route, an interrupt
gone, a new one, another payload, a new or fixed failure, a node removed)
is reported at its step, and the same code matches throughout. On every
store kind.
"""

from __future__ import annotations

import contextlib
import operator
from typing import Annotated, Any, TypedDict

import pytest

from domain.access.actor import local_actor
from domain.engine.replay import (
    DIFFERENT_ERROR,
    DIFFERENT_INTERRUPT,
    DIFFERENT_ROUTE,
    DIFFERENT_UPDATE,
    INTERRUPT_GONE,
    MATCH,
    NEW_INTERRUPT,
    NO_LONGER_FAILS,
    NODE_MISSING,
    NOW_FAILS,
    Outcome,
    replay_thread,
    threads_by_graph,
)
from domain.graph import END, START, CompiledStateGraph, StateGraph
from domain.history.forks import fork_at_version
from domain.history.time_travel import fork_origin
from domain.record.application import Workflows
from domain.record.thread_uuids import thread_uuid
from domain.types import Command, interrupt


class Review(TypedDict):
    amount: float
    approved: Any
    total: float
    log: Annotated[list, operator.add]


def review_graph(
    store: Workflows,
    *,
    asks: bool = True,
    question: str = "Pay {amount}?",
    factor: float = 1.0,
    approve_goes_to: str = "pay",
    pay_fails: bool = False,
    pay_name: str = "pay",
    seen: list[dict[str, Any]] | None = None,
) -> CompiledStateGraph:
    """START -> ask -> pay (when approved) or refuse -> END; each keyword changes the code."""

    def ask(state: Review) -> dict[str, Any]:
        if seen is not None:
            seen.append(dict(state))
        approved = interrupt({"question": question.format(**state)}) if asks else True
        return {"approved": approved, "log": ["ask"]}

    def pay(state: Review) -> dict[str, Any]:
        if pay_fails:
            msg = f"the bank refused {state['amount']}"
            raise ValueError(msg)
        return {"total": state["amount"] * factor, "log": [pay_name]}

    def refuse(state: Review) -> dict[str, Any]:
        return {"log": ["refuse"]}

    builder = StateGraph(Review)
    builder.add_node("ask", ask)
    builder.add_node(pay_name, pay)
    builder.add_node("refuse", refuse)
    builder.add_edge(START, "ask")
    builder.add_conditional_edges(
        "ask", lambda state: approve_goes_to if state["approved"] else "refuse"
    )
    builder.add_edge(pay_name, END)
    builder.add_edge("refuse", END)
    return builder.compile(checkpointer=store, name="review")


def config(thread_id: str = "t1", **configurable: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id, **configurable}}


def record(graph: CompiledStateGraph, thread_id: str = "t1", answer: Any = True) -> None:
    """Ask about 250.0 and answer; a failing node's error is recorded, then swallowed."""
    graph.invoke({"amount": 250.0, "approved": None, "total": 0.0}, config(thread_id))
    with contextlib.suppress(ValueError):
        graph.invoke(Command(resume=answer), config(thread_id))


def replay(store: Workflows, graph: CompiledStateGraph, thread_id: str = "t1") -> Any:
    return replay_thread(store.iter_thread_events(thread_id), graph)


def verdicts(report: Any) -> list[tuple[int, str, str]]:
    return [(step.version, step.node, step.verdict) for step in report.steps]


@pytest.fixture
def recorded(store: Workflows) -> Workflows:
    """Thread t1 on today's review code: asked (version 4), approved (5), ask (6), pay (7)."""
    record(review_graph(store))
    return store


# -- the same code -------------------------------------------------------------


def test_the_same_code_matches_the_record_at_every_step(recorded):
    # When
    report = replay(recorded, review_graph(recorded))

    # Then
    assert verdicts(report) == [(4, "ask", MATCH), (6, "ask", MATCH), (7, "pay", MATCH)]
    assert report.matches
    assert report.divergences == []
    assert report.digest_matches
    assert (report.thread_id, report.graph_id) == ("t1", "review")


def test_each_step_shows_the_recorded_and_the_replayed_outcome(recorded):
    # When
    report = replay(recorded, review_graph(recorded))

    # Then
    paused, answered, paid = report.steps
    assert (
        paused.recorded
        == paused.replayed
        == Outcome("interrupted", index=0, value={"question": "Pay 250.0?"})
    )
    assert answered.replayed == Outcome(
        "completed", update={"approved": True, "log": ["ask"]}, routes=["pay"]
    )
    assert paid.recorded.update == {"total": 250.0, "log": ["pay"]}


def test_nodes_are_replayed_on_the_state_they_saw_and_with_the_answers_they_had(store):
    # Given the states `ask` saw when the thread was recorded
    seen_then: list[dict[str, Any]] = []
    record(review_graph(store, seen=seen_then), answer=False)

    # When it is replayed
    seen_now: list[dict[str, Any]] = []
    report = replay(store, review_graph(store, seen=seen_now))

    # Then it saw the same states, and the recorded "no" led it to `refuse` again
    assert seen_now == seen_then
    assert verdicts(report) == [(4, "ask", MATCH), (6, "ask", MATCH), (7, "refuse", MATCH)]
    assert report.steps[1].replayed.update == {"approved": False, "log": ["ask"]}


# -- drift -----------------------------------------------------------------------


def test_a_different_update_is_reported_at_its_step(recorded):
    # When `pay` now doubles the amount
    report = replay(recorded, review_graph(recorded, factor=2.0))

    # Then
    assert verdicts(report)[-1] == (7, "pay", DIFFERENT_UPDATE)
    step = report.steps[-1]
    assert step.recorded.update == {"total": 250.0, "log": ["pay"]}
    assert step.replayed.update == {"total": 500.0, "log": ["pay"]}
    assert "'total'" in step.detail
    assert not report.matches
    assert [s.verdict for s in report.steps[:2]] == [MATCH, MATCH]


def test_a_different_route_is_reported_at_its_step(recorded):
    # When an approval now goes to `refuse`
    report = replay(recorded, review_graph(recorded, approve_goes_to="refuse"))

    # Then
    assert verdicts(report) == [(4, "ask", MATCH), (6, "ask", DIFFERENT_ROUTE), (7, "pay", MATCH)]
    step = report.steps[1]
    assert (step.recorded.routes, step.replayed.routes) == (["pay"], ["refuse"])
    assert step.detail == "node 'ask' now routes to refuse, not pay"


def test_an_interrupt_that_no_longer_fires_is_reported(recorded):
    # When `ask` no longer asks
    report = replay(recorded, review_graph(recorded, asks=False))

    # Then
    assert verdicts(report)[0] == (4, "ask", INTERRUPT_GONE)
    assert report.steps[0].replayed.kind == "completed"


def test_a_new_interrupt_is_reported(store):
    # Given a thread recorded when `ask` did not ask
    review_graph(store, asks=False).invoke(
        {"amount": 250.0, "approved": None, "total": 0.0}, config()
    )

    # When it now asks
    report = replay(store, review_graph(store))

    # Then
    assert verdicts(report) == [(4, "ask", NEW_INTERRUPT), (5, "pay", MATCH)]
    assert report.steps[0].replayed == Outcome(
        "interrupted", index=0, value={"question": "Pay 250.0?"}
    )


def test_a_different_interrupt_payload_is_reported(recorded):
    # When the question's wording changed
    report = replay(recorded, review_graph(recorded, question="Refund {amount}?"))

    # Then: and the answer, given to the recorded question, does not apply to the new one
    assert verdicts(report)[0] == (4, "ask", DIFFERENT_INTERRUPT)
    assert report.steps[0].replayed.value == {"question": "Refund 250.0?"}
    assert verdicts(report)[1:] == [(6, "ask", NEW_INTERRUPT), (7, "pay", MATCH)]


def test_a_node_that_now_fails_is_reported_with_its_error(recorded):
    # When `pay` now raises
    report = replay(recorded, review_graph(recorded, pay_fails=True))

    # Then
    assert verdicts(report)[-1] == (7, "pay", NOW_FAILS)
    assert report.steps[-1].replayed == Outcome(
        "failed", error_type="ValueError", message="the bank refused 250.0"
    )


def test_a_recorded_failure_that_no_longer_happens_is_reported(store):
    # Given a thread whose `pay` failed
    record(review_graph(store, pay_fails=True))

    # When it is replayed on fixed code
    report = replay(store, review_graph(store))

    # Then
    assert verdicts(report)[-1] == (7, "pay", NO_LONGER_FAILS)
    assert report.steps[-1].recorded.error_type == "ValueError"


def test_a_recorded_failure_replayed_on_the_same_code_matches(store):
    # Given
    record(review_graph(store, pay_fails=True))

    # When
    report = replay(store, review_graph(store, pay_fails=True))

    # Then
    assert report.matches
    assert report.steps[-1].replayed.error_type == "ValueError"


def test_a_node_that_fails_differently_is_reported(store):
    # Given a thread whose `pay` failed with ValueError
    record(review_graph(store, pay_fails=True))

    # When the bank call now gives a wrong type of answer
    report = replay(store, review_graph(store, factor="x"))  # type: ignore[arg-type]

    # Then
    assert verdicts(report)[-1] == (7, "pay", DIFFERENT_ERROR)
    assert report.steps[-1].replayed.error_type == "TypeError"


def test_a_node_no_longer_in_the_graph_is_reported(recorded):
    # When `pay` was renamed `settle`
    report = replay(recorded, review_graph(recorded, pay_name="settle", approve_goes_to="settle"))

    # Then
    assert verdicts(report) == [
        (4, "ask", MATCH),
        (6, "ask", DIFFERENT_ROUTE),
        (7, "pay", NODE_MISSING),
    ]
    assert report.steps[-1].replayed is None


def test_a_changed_conditional_entry_point_is_reported(store):
    # Given a graph whose entry is chosen by code
    def graph(big: float) -> CompiledStateGraph:
        builder = StateGraph(Review)
        builder.add_node("small", lambda state: {"log": ["small"]})
        builder.add_node("large", lambda state: {"log": ["large"]})
        builder.add_conditional_edges(
            START, lambda state: "large" if state["amount"] > big else "small"
        )
        builder.add_edge("small", END)
        builder.add_edge("large", END)
        return builder.compile(checkpointer=store, name="entry")

    graph(100.0).invoke({"amount": 250.0, "approved": None, "total": 0.0}, config())

    # When the threshold moved
    same, moved = replay(store, graph(100.0)), replay(store, graph(1000.0))

    # Then
    assert verdicts(same) == [(3, "__start__", MATCH), (4, "large", MATCH)]
    assert verdicts(moved)[0] == (3, "__start__", DIFFERENT_ROUTE)


def test_a_fork_replays_from_its_source_state_and_its_reraised_interrupt_matches(recorded):
    # Given a fork inside the pause, answered on the fork
    fork_at_version(recorded, "t1", 4, local_actor(), new_thread_id="t1-b")
    review_graph(recorded).invoke(Command(resume=True), config("t1-b"))

    # When
    report = replay(recorded, review_graph(recorded), "t1-b")

    # Then
    assert verdicts(report) == [(2, "ask", MATCH), (4, "ask", MATCH), (5, "pay", MATCH)]
    assert fork_origin(recorded, "t1-b").version == 4


def test_the_report_compares_the_recorded_graph_digest_with_todays(store):
    # Given a one-node graph recorded with one body of `only`
    def graph(only: Any) -> CompiledStateGraph:
        builder = StateGraph(Review)
        builder.add_node("only", only)
        builder.add_edge(START, "only")
        return builder.compile(checkpointer=store, name="single")

    def before(state: Review) -> dict[str, Any]:
        return {"log": ["only"]}

    def after(state: Review) -> dict[str, Any]:
        return {"log": ["only"], "total": 1.0}

    recorded_on = graph(before)
    recorded_on.invoke({"amount": 1.0, "approved": None, "total": 0.0}, config())

    # When
    same, changed = replay(store, graph(before)), replay(store, graph(after))

    # Then
    assert same.recorded_digest == recorded_on.digest == same.current_digest
    assert same.digest_matches
    assert changed.current_digest != changed.recorded_digest
    assert not changed.digest_matches
    assert verdicts(changed) == [(4, "only", DIFFERENT_UPDATE)]


# -- writing nothing, and finding threads ------------------------------------------


def test_replay_writes_nothing_even_when_the_code_diverges(recorded):
    # Given
    head = recorded.recorder.max_notification_id()
    before = [bytes(e.state) for e in recorded.recorder.select_events(thread_uuid("t1"))]

    # When
    replay(recorded, review_graph(recorded))
    replay(recorded, review_graph(recorded, asks=False, pay_fails=True))

    # Then
    assert recorded.recorder.max_notification_id() == head
    assert [bytes(e.state) for e in recorded.recorder.select_events(thread_uuid("t1"))] == before


def test_threads_by_graph_lists_started_and_forked_threads_oldest_first(recorded):
    # Given another graph's thread and a fork
    record(review_graph(recorded), "t2")
    fork_at_version(recorded, "t1", 4, local_actor(), new_thread_id="t1-b")
    other = StateGraph(Review)
    other.add_node("only", lambda state: {"log": ["only"]})
    other.add_edge(START, "only")
    other.compile(checkpointer=recorded, name="other").invoke(
        {"amount": 1.0, "approved": None, "total": 0.0}, config("o1")
    )

    # When
    found = threads_by_graph(recorded, page=2)

    # Then
    assert found == {"review": ["t1", "t2", "t1-b"], "other": ["o1"]}


def test_replay_needs_the_threads_first_event():
    with pytest.raises(ValueError, match="from its first"):
        replay_thread([], review_graph(None))  # type: ignore[arg-type]
