"""Deadlines: an overdue interrupt's rule fires once, decided or escalated."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, TypedDict

import pytest

from domain.errors import InvalidUpdateError
from domain.graph import END, START, StateGraph
from domain.record import schema
from domain.record.application import Workflows
from domain.record.store import open_store
from domain.record.thread import WorkflowThread
from domain.types import Command, interrupt
from projections.catalog import runner_for
from projections.deadlines import DeadlineWorker, expire_overdue
from projections.oversight_report import oversight_report
from projections.pending_approvals import PendingApprovals


class Refund(TypedDict):
    approved: Any


def graph_with_deadline(store: Workflows, on_expiry: str = "reject"):
    def ask(state: Refund) -> dict[str, Any]:
        answer = interrupt("approve?", required_role="reviewer", deadline=60, on_expiry=on_expiry)
        return {"approved": answer}

    builder = StateGraph(Refund)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    return builder.compile(checkpointer=store, name="refund")


def config(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}}


def later(seconds: float) -> datetime:
    return datetime.now(UTC) + timedelta(seconds=seconds)


def expiries(store: Workflows, thread_id: str) -> list[Any]:
    events = store.thread_events(thread_id)
    return [e for e in events if isinstance(e, WorkflowThread.InterruptExpired)]


def test_an_interrupt_records_its_deadline_and_rule(store):
    graph_with_deadline(store).invoke({"approved": None}, config("t"))
    raised = next(
        e for e in store.thread_events("t") if isinstance(e, WorkflowThread.InterruptRaised)
    )
    assert raised.required_role == "reviewer"
    due = datetime.fromisoformat(raised.due_by)
    assert 59 <= (due - raised.timestamp).total_seconds() <= 61
    assert raised.on_expiry == {
        "action": "decide",
        "decision": "reject",
        "resume": False,
        "seconds": 60,
    }


def longest(old: str, new: str) -> str:
    return old if len(old) >= len(new) else new


class Note(TypedDict):
    note: Annotated[str, longest]


def test_a_worker_that_cannot_read_a_thread_leaves_it_and_expires_the_others(store, monkeypatch):
    # Given two overdue interrupts, one on a thread whose state folds with its graph's own
    # reducer, which this worker does not know (its graph is not loaded here)
    def ask(state: Note) -> dict[str, Any]:
        return {"note": interrupt("ok?", deadline=60)}

    builder = StateGraph(Note)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    builder.compile(checkpointer=store, name="notes").invoke({"note": "x"}, config("n"))
    graph_with_deadline(store).invoke({"approved": None}, config("t"))
    monkeypatch.delitem(schema._REDUCERS, schema.reducer_name(longest))
    runner = runner_for(store)
    runner.catch_up()

    # When
    expired = expire_overdue(store, runner.db, now=later(61))

    # Then
    assert len(expired) == 1
    assert [len(expiries(store, "t")), len(expiries(store, "n"))] == [1, 0]


def test_nothing_expires_before_the_deadline(store):
    graph_with_deadline(store).invoke({"approved": None}, config("t"))
    runner = runner_for(store)
    runner.catch_up()
    assert expire_overdue(store, runner.db, now=later(30)) == []
    assert expiries(store, "t") == []


def test_an_overdue_interrupt_is_rejected_by_default_and_the_thread_goes_on(store):
    # Given a thread paused at an interrupt with a 60 s deadline
    graph = graph_with_deadline(store)
    graph.invoke({"approved": None}, config("t"))
    runner = runner_for(store)
    runner.catch_up()
    # When the deadline worker runs after it
    expired = expire_overdue(store, runner.db, now=later(61))
    # Then InterruptExpired is recorded, the queue forgets it, and the node gets False
    assert len(expired) == 1
    [event] = expiries(store, "t")
    assert event.rule["decision"] == "reject"
    runner.catch_up()
    assert PendingApprovals(runner.db).page().total == 0
    assert graph.invoke(None, config("t")) == {"approved": False}


def test_an_escalation_keeps_the_interrupt_open_for_another_role(store):
    graph_with_deadline(store, on_expiry="escalate:manager").invoke({"approved": None}, config("t"))
    runner = runner_for(store)
    runner.catch_up()
    expire_overdue(store, runner.db, now=later(61))
    runner.catch_up()
    queue = PendingApprovals(runner.db)
    [row] = queue.page().items
    assert row.required_role == "manager"
    assert (queue.page(role="manager").total, queue.page(role="reviewer").total) == (1, 0)
    assert store.thread("t").status == "interrupted"
    # and its new deadline is counted from the escalation
    assert expire_overdue(store, runner.db, now=later(90)) == []
    assert len(expire_overdue(store, runner.db, now=later(125))) == 1


@pytest.mark.parametrize("url_fixture", ["sqlite_url", "postgres_url"])
def test_two_workers_at_once_record_one_expiry(request, url_fixture):
    url = request.getfixturevalue(url_fixture)
    with open_store(url) as first, open_store(url) as second:
        graph_with_deadline(first).invoke({"approved": None}, config("t"))
        runners = [runner_for(first), runner_for(second)]
        for runner in runners:
            runner.catch_up()
        start = threading.Barrier(2)
        now = later(61)

        def work(store: Workflows, runner: Any) -> None:
            start.wait()
            expire_overdue(store, runner.db, now=now)

        workers = [
            threading.Thread(target=work, args=(s, r))
            for s, r in zip((first, second), runners, strict=True)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        assert len(expiries(first, "t")) == 1


def test_expiries_count_as_decisions_and_breaches_in_the_report(store):
    graph = graph_with_deadline(store)
    graph.invoke({"approved": None}, config("t"))
    runner = runner_for(store)
    runner.catch_up()
    expire_overdue(store, runner.db, now=later(61))
    runner.catch_up()
    report = oversight_report(runner.db, since=later(-3600), until=later(3600), now=later(62))
    assert report["decisions"]["by_kind"]["expired"] == 1
    assert report["deadline_breaches"]["value"] == 1
    assert report["coverage"]["expired"] == 1
    assert report["coverage"]["accounted_for"] is True


@pytest.mark.parametrize("bad", [{"deadline": 0}, {"deadline": 5, "on_expiry": "ignore"}])
def test_a_bad_deadline_fails_the_node_with_a_clear_error(store, bad):
    def ask(state: Refund) -> dict[str, Any]:
        return {"approved": interrupt("?", **bad)}

    builder = StateGraph(Refund)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    with pytest.raises(InvalidUpdateError):
        builder.compile(checkpointer=store).invoke({"approved": None}, config("t"))


def plain_graph(store: Workflows, **deadline: Any):
    def ask(state: Refund) -> dict[str, Any]:
        return {"approved": interrupt("approve?", **deadline)}

    builder = StateGraph(Refund)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    return builder.compile(checkpointer=store, name="plain")


def raised(store: Workflows, thread_id: str) -> Any:
    events = store.thread_events(thread_id)
    return next(e for e in events if isinstance(e, WorkflowThread.InterruptRaised))


def test_a_graph_deadline_applies_to_interrupts_that_give_none(store):
    # Given a graph whose interrupts have a default deadline of 2 minutes, approve on expiry
    graph = plain_graph(store)
    graph.set_interrupt_deadline(timedelta(minutes=2), "approve")

    # When a thread pauses, and the deadline worker runs after the deadline
    graph.invoke({"approved": None}, config("t"))
    runner = runner_for(store)
    runner.catch_up()
    assert expire_overdue(store, runner.db, now=later(110)) == []
    expired = expire_overdue(store, runner.db, now=later(121))

    # Then the default rule fired, and the node got True
    assert raised(store, "t").on_expiry == {
        "action": "decide",
        "decision": "approve",
        "resume": True,
        "seconds": 120,
    }
    assert len(expired) == 1
    assert graph.invoke(None, config("t")) == {"approved": True}


def test_an_interrupts_own_deadline_wins_over_the_graphs(store):
    # Given
    graph = plain_graph(store, deadline=30, on_expiry="escalate:lead")
    graph.set_interrupt_deadline(3600)

    # When
    graph.invoke({"approved": None}, config("t"))

    # Then
    assert raised(store, "t").on_expiry == {"action": "escalate", "role": "lead", "seconds": 30}


@pytest.mark.parametrize(("deadline", "rule"), [(0, "reject"), (-5, "reject"), (60, "ignore")])
def test_a_bad_graph_deadline_is_refused_when_set(store, deadline, rule):
    graph = plain_graph(store)
    with pytest.raises(InvalidUpdateError):
        graph.set_interrupt_deadline(deadline, rule)
    graph.invoke({"approved": None}, config("t"))
    assert raised(store, "t").due_by is None


def test_a_queue_row_for_an_interrupt_already_answered_records_nothing(store):
    # Given an overdue interrupt answered by a reviewer after the queue was last read
    graph = graph_with_deadline(store)
    graph.invoke({"approved": None}, config("t"))
    runner = runner_for(store)
    runner.catch_up()
    graph.invoke(Command(resume=True), config("t"))

    # When the worker runs on the stale queue
    expired = expire_overdue(store, runner.db, now=later(61))

    # Then
    assert expired == []
    assert expiries(store, "t") == []


def test_the_deadline_worker_looks_at_most_once_a_period(store):
    # Given a worker that looks at most once an hour, and a thread overdue at once
    graph = plain_graph(store, deadline=1e-6)
    graph.invoke({"approved": None}, config("first"))
    runner = runner_for(store)
    runner.catch_up()
    worker = DeadlineWorker(store, runner.db, every=3600)
    # When it runs after a pass, it expires the overdue interrupt
    assert len(worker()) == 1
    assert len(expiries(store, "first")) == 1
    # Then after the next pass, within the hour, it does not look again
    graph.invoke({"approved": None}, config("second"))
    runner.catch_up()
    assert worker() == []
    assert expiries(store, "second") == []
    # And once its period has passed it does
    worker.every = 0
    assert len(worker()) == 1
    assert len(expiries(store, "second")) == 1
