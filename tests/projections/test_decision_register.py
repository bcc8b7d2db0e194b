"""The decision register holds one row per decision on record: given a store with every
kind of thread and every hold-point story (four eyes, deadlines that decided and that
escalated, questions asked again), when the register is built, then its rows are the
answers, approvals and deadline decisions read from the events themselves, each with
the question it decided, who, in which role, and how long after the question."""

from __future__ import annotations

from domain.record.thread import WorkflowThread
from domain.types import Command
from projections.catalog import runner_for
from projections.decision_register import DecisionRegister
from projections.timestamps import parse_utc_text, utc_text
from tests.projections.histories import record_history
from tests.projections.hold_point_histories import record_hold_points
from tests.projections.test_deadlines import config, graph_with_deadline, later

ADMIN = {"id": "ada", "role": "admin", "authenticated": True, "via": "test"}
DECIDING = (
    WorkflowThread.InterruptResumed,
    WorkflowThread.InterruptApproved,
    WorkflowThread.InterruptExpired,
)


def decisions_on_record(store) -> list[tuple[int, str, str | None, str, str]]:
    """(position, interrupt, decider, decision, by) of every decision, from the events."""
    found, raised = [], {}
    for notification in store.recorder.select_notifications(start=1, limit=1_000_000):
        event = store.mapper.to_domain_event(notification)
        if isinstance(event, WorkflowThread.InterruptRaised):
            raised[event.interrupt_id] = event
        if not isinstance(event, DECIDING):
            continue
        if isinstance(event, WorkflowThread.InterruptExpired):
            if event.rule["action"] != "escalate":
                found.append(
                    (notification.id, event.interrupt_id, None, event.rule["decision"], "deadline")
                )
        elif isinstance(event, WorkflowThread.InterruptApproved):
            found.append(
                (notification.id, event.interrupt_id, event.actor["id"], "approve", "approval")
            )
        else:
            by = (notification.id, event.interrupt_id, event.actor["id"], event.decision, "answer")
            found.append(by)
    assert raised  # the history asked questions
    return found


def record_deadlines(store) -> None:
    """A deadline that decided (its rule rejects), and one that escalated to an admin,
    who then decided: the escalation moves the deadline and decides nothing."""
    graph_with_deadline(store).invoke({"approved": None}, config("dl-rejected"))
    escalating = graph_with_deadline(store, "escalate:admin")
    escalating.invoke({"approved": None}, config("dl-escalated"))
    for thread_id in ("dl-rejected", "dl-escalated"):
        [pending] = store.thread(thread_id).interrupts
        store.expire(thread_id, pending, later(61))
    answer = {"configurable": {"thread_id": "dl-escalated", "actor": ADMIN}}
    escalating.invoke(Command(resume=True), answer)


def test_the_registers_rows_are_the_decisions_on_record(store):
    record_history(store)
    record_hold_points(store, "hp-")
    record_deadlines(store)
    runner = runner_for(store)
    runner.catch_up()

    rows = DecisionRegister(runner.db).decisions()

    expected = decisions_on_record(store)
    assert [(r.position, r.interrupt_id, r.decider_id, r.decision, r.by) for r in rows] == expected
    assert {r.by for r in rows} == {"answer", "approval", "deadline"}
    late, escalated = [r for r in rows if r.thread_id.startswith("dl-")]
    assert (late.by, late.decision, late.decider_id) == ("deadline", "reject", None)
    assert (escalated.by, escalated.decider_id, escalated.decider_role) == (
        "answer",
        "ada",
        "admin",
    )
    assert parse_utc_text(escalated.due_by) > parse_utc_text(late.due_by)  # moved by it
    for row in rows:
        assert row.question_digest
        assert row.raised_at is not None
        assert (
            row.seconds_to_decide
            == (parse_utc_text(row.decided_at) - parse_utc_text(row.raised_at)).total_seconds()
        )
        assert row.seconds_to_decide >= 0
    runner.close()


def test_a_period_and_a_graph_select_the_decisions_made_in_them(store):
    record_history(store)
    record_hold_points(store, "hp-")
    runner = runner_for(store)
    runner.catch_up()
    register = DecisionRegister(runner.db)
    every = register.decisions()
    middle = every[len(every) // 2].decided_at

    before, after = register.decisions(until=middle), register.decisions(since=middle)

    assert before + after == every
    assert all(r.decided_at < middle for r in before)
    graph = every[0].graph_id
    assert register.decisions(graph_id=graph) == [r for r in every if r.graph_id == graph]
    assert register.decisions(since=utc_text(parse_utc_text(every[-1].decided_at))) == [
        r for r in every if r.decided_at >= every[-1].decided_at
    ]
    runner.close()
