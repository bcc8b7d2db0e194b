"""Suspending a graph over HTTP (Art. 14(4)(e) for a whole graph): given a refund paused at
its interrupt, when a reviewer suspends the graph, then no new run, no decision, no
resume and no edit of it is taken (409, recording nothing), the queue shows who suspended it and
why, only an admin lifts it, and the decision then goes through."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from domain.record.thread import WorkflowThread
from domain.schedule.crons import Crons
from tests.api.http_harness import running_server


@pytest.fixture
def server(tmp_path):
    with running_server(f"sqlite:///{tmp_path / 'holdpoint.db'}") as running:
        yield running


def paused_refund(server):
    agent = server.sdk("agent")
    thread_id = agent.threads.create()["thread_id"]
    output = agent.runs.wait(thread_id, "refund", input={"refund_amount": 300.0})
    return thread_id, output["__interrupt__"][0]["id"]


def suspended_problem(answer):
    assert answer.status_code == 409, answer.text
    assert answer.json()["type"].endswith("graph-suspended")
    assert "wrong refunds" in answer.json()["detail"]


def test_a_suspended_graph_takes_no_run_decision_or_resume_until_an_admin_lifts_it(server):
    thread_id, interrupt_id = paused_refund(server)
    with server.http("reviewer") as reviewer:
        suspended = reviewer.post("/graphs/refund/suspend", json={"reason": "wrong refunds"})
        assert suspended.status_code == 200, suspended.text
        [item] = reviewer.get("/approvals").json()["data"]
    assert item["graph_suspended"] == {"by": "reviewer", "reason": "wrong refunds"}

    head = server.head()
    with server.http("agent") as agent:
        suspended_problem(agent.post("/runs/wait", json={"assistant_id": "refund", "input": {}}))
    with server.http("reviewer") as reviewer:
        decision = {"decision": "approve", "reason": "ok"}
        suspended_problem(reviewer.post(f"/approvals/{interrupt_id}/decision", json=decision))
        resume = {"assistant_id": "refund", "command": {"resume": {interrupt_id: True}}}
        suspended_problem(reviewer.post(f"/threads/{thread_id}/runs/wait", json=resume))
        edit = {"values": {"approved": True}, "as_node": "check_and_process", "reason": "ok"}
        suspended_problem(reviewer.post(f"/threads/{thread_id}/state", json=edit))
        assert server.head() == head  # the four refusals recorded nothing
        not_theirs = reviewer.post("/graphs/refund/lift", json={"reason": "fixed"})
    assert not_theirs.status_code == 403  # recorded as a refused attempt, as every 403
    with server.http("admin") as admin:
        no_reason = admin.post("/graphs/refund/lift", json={})
        lifted = admin.post("/graphs/refund/lift", json={"reason": "fixed in release 2"})
    assert no_reason.status_code == 422
    assert lifted.status_code == 200

    with server.http("reviewer") as reviewer:
        decided = reviewer.post(f"/approvals/{interrupt_id}/decision", json=decision)
    assert decided.status_code == 200, decided.text
    recorded = [
        e
        for e in server.store.thread_events(thread_id)
        if isinstance(e, WorkflowThread.InterruptResumed)
    ]
    assert len(recorded) == 1


def test_who_may_suspend_and_what_is_refused(server):
    with server.http("agent") as agent:
        assert agent.post("/graphs/refund/suspend", json={"reason": "x"}).status_code == 403
    with server.http("reviewer") as reviewer:
        assert reviewer.post("/graphs/nope/suspend", json={"reason": "x"}).status_code == 404
        assert reviewer.post("/graphs/refund/suspend", json={}).status_code == 422
        assert reviewer.post("/graphs/refund/suspend", json={"reason": "x"}).status_code == 200
        again = reviewer.post("/graphs/refund/suspend", json={"reason": "x"})
    assert again.status_code == 409
    assert "suspended already" in again.json()["detail"]


def test_a_cron_of_a_suspended_graph_fires_nothing_then_once_when_lifted(server):
    services = server.services
    actor = {"id": "agent", "role": "agent"}
    cron = Crons(services.store).schedule(
        graph_id="refund",
        thread_id=None,
        schedule="* * * * *",
        payload={"input": {"refund_amount": 5.0}},
        actor=actor,
    )
    due = cron.next_due()
    assert due is not None
    with server.http("reviewer") as reviewer:
        reviewer.post("/graphs/refund/suspend", json={"reason": "wrong refunds"})
    services.read_models.catch_up_to_head()
    assert services.scheduler.run_once(due + timedelta(minutes=3)) == []
    with server.http("admin") as admin:
        admin.post("/graphs/refund/lift", json={"reason": "fixed"})
    [fired] = services.scheduler.run_once(datetime.now(UTC) + timedelta(minutes=3))
    assert fired.cron.cron_id == cron.cron_id
