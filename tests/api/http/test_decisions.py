"""Decisions over HTTP: one winner among concurrent answers, idempotent retries,
roles, separation of duties, stale answers and busy threads, each refusal on
record; the decider is always the API key's principal. On SQLite and PostgreSQL."""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from domain.record.thread import WorkflowThread
from service.run_store import StoredRun
from tests.api.http_harness import running_server, server_on


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server(request, tmp_path_factory):
    with server_on(request.param, tmp_path_factory.mktemp("store")) as running:
        yield running


def paused_refund(server, graph="refund", who="agent", values=None):
    """A thread paused at its interrupt: (thread id, interrupt id)."""
    sdk = server.sdk(who)
    thread_id = sdk.threads.create()["thread_id"]
    output = sdk.runs.wait(thread_id, graph, input=values or {"refund_amount": 300.0})
    return thread_id, output["__interrupt__"][0]["id"]


def decisions_recorded(server, thread_id):
    events = server.store.thread_events(thread_id)
    return [e for e in events if isinstance(e, WorkflowThread.InterruptResumed)]


def refusals_after(server, position):
    """The refusals recorded after log position `position`, oldest first."""
    with server.http("auditor") as auditor:
        data = auditor.get("/audit/refusals", params={"after": position, "limit": 1000}).json()
    return data["data"]


def test_of_50_concurrent_decisions_exactly_one_wins(server):
    thread_id, interrupt_id = paused_refund(server)
    position = server.head()
    deciders = ["reviewer", "reviewer2", "admin"]
    clients = {who: server.http(who) for who in deciders}

    def decide(n):
        who = deciders[n % len(deciders)]
        decision = "approve" if n % 2 else "reject"
        return clients[who].post(
            f"/approvals/{interrupt_id}/decision", json={"decision": decision, "reason": f"#{n}"}
        )

    with ThreadPoolExecutor(max_workers=50) as pool:
        responses = list(pool.map(decide, range(50)))
    for client in clients.values():
        client.close()
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200] + [409] * 49
    (winner,) = [r.json() for r in responses if r.status_code == 200]
    recorded = decisions_recorded(server, thread_id)
    assert len(recorded) == 1
    assert recorded[0].actor["id"] == winner["decided_by"]["id"]
    for loser in (r for r in responses if r.status_code == 409):
        problem = loser.json()
        assert loser.headers["content-type"] == "application/problem+json"
        assert problem["decided_by"] == winner["decided_by"]
        assert problem["decided_at"] == winner["decided_at"]
        assert winner["decided_by"]["id"] in problem["detail"]
        assert winner["decided_at"] in problem["detail"]
        assert problem["reason"] in ("conflict", "stale_interrupt")
    # And each of the 49 refusals is on record: who, why, on which interrupt
    refused = [r for r in refusals_after(server, position) if r["target"] == interrupt_id]
    assert len(refused) == 49
    assert Counter((r["principal_id"], r["reason"]) for r in refused) == Counter(
        (deciders[n % len(deciders)], r.json()["reason"])
        for n, r in enumerate(responses)
        if r.status_code == 409
    )
    assert {r["action"] for r in refused} == {f"POST /approvals/{interrupt_id}/decision"}


def test_a_retry_with_the_same_idempotency_key_returns_the_first_answer(server):
    thread_id, interrupt_id = paused_refund(server)
    body = {"decision": "reject", "reason": "No receipt"}
    headers = {"Idempotency-Key": f"retry-{interrupt_id}"}
    with server.http("reviewer") as reviewer:
        first = reviewer.post(f"/approvals/{interrupt_id}/decision", json=body, headers=headers)
        server.sdk("agent").runs.join(thread_id, first.json()["run_id"])  # the node ran again
        events = server.event_count(thread_id)
        again = reviewer.post(f"/approvals/{interrupt_id}/decision", json=body, headers=headers)
        # Without the key, the same answer is refused: it was decided already
        plain = reviewer.post(f"/approvals/{interrupt_id}/decision", json=body)
        # The same key for another answer is refused too
        other = reviewer.post(
            f"/approvals/{interrupt_id}/decision", json={"decision": "approve"}, headers=headers
        )
    assert first.status_code == 200
    assert again.status_code == 200
    # The same answer, and the run it began as it stands now: ended, where it was running
    assert {**again.json(), "run": None} == {**first.json(), "run": None}
    assert again.json()["run"] == {**first.json()["run"], "status": "success"}
    assert first.json()["idempotency_key"] == headers["Idempotency-Key"]
    assert first.json()["resume"] is False
    assert server.event_count(thread_id) == events
    assert plain.status_code == 409
    assert other.status_code == 422
    assert "Idempotency-Key" in other.json()["detail"]
    assert len(decisions_recorded(server, thread_id)) == 1


def test_an_idempotent_answer_survives_a_restart(tmp_path):
    url = f"sqlite:///{tmp_path / 'holdpoint.db'}"
    body = {"decision": "approve", "reason": "ok"}
    headers = {"Idempotency-Key": "survives-restart"}
    with running_server(url) as first_server:
        thread_id, interrupt_id = paused_refund(first_server)
        with first_server.http("reviewer") as reviewer:
            first = reviewer.post(f"/approvals/{interrupt_id}/decision", json=body, headers=headers)
        first_server.sdk("agent").runs.join(thread_id, first.json()["run_id"])
    with running_server(url) as second_server:
        events = second_server.event_count(thread_id)
        with second_server.http("reviewer") as reviewer:
            again = reviewer.post(f"/approvals/{interrupt_id}/decision", json=body, headers=headers)
        assert second_server.event_count(thread_id) == events
    assert again.status_code == 200
    # The same answer, and the run it began as it stands now: ended, where it was running
    assert {**again.json(), "run": None} == {**first.json(), "run": None}
    assert again.json()["run"] == {**first.json()["run"], "status": "success"}


def test_the_principal_who_started_a_thread_may_not_decide_it(server):
    thread_id, interrupt_id = paused_refund(server, who="admin")
    position = server.head()
    with server.http("admin") as admin:
        refused = admin.post(f"/approvals/{interrupt_id}/decision", json={"decision": "approve"})
    assert refused.status_code == 403
    assert refused.json()["reason"] == "separation_of_duties"
    assert "separation of duties" in refused.json()["detail"]
    assert decisions_recorded(server, thread_id) == []
    # And the refusal is on record
    [recorded] = refusals_after(server, position)
    assert (recorded["principal_id"], recorded["role"]) == ("admin", "admin")
    assert recorded["reason"] == "separation_of_duties"
    assert recorded["target"] == interrupt_id
    assert recorded["message"] == refused.json()["detail"]
    with server.http("reviewer") as reviewer:
        other = reviewer.post(f"/approvals/{interrupt_id}/decision", json={"decision": "approve"})
    assert other.status_code == 200


def test_an_interrupt_that_requires_a_role_refuses_the_others(server):
    thread_id, interrupt_id = paused_refund(server, graph="guarded", values={"amount": 9.5})
    with server.http("reviewer") as reviewer:
        refused = reviewer.post(f"/approvals/{interrupt_id}/decision", json={"decision": "approve"})
    assert refused.status_code == 403
    assert refused.json()["reason"] == "wrong_role"
    assert "'admin'" in refused.json()["detail"]
    with server.http("admin") as admin:
        accepted = admin.post(f"/approvals/{interrupt_id}/decision", json={"decision": "approve"})
    assert accepted.status_code == 200
    output = server.sdk("agent").runs.join(thread_id, accepted.json()["run_id"])
    assert output == {"amount": 9.5, "paid": True}


def test_an_interrupt_that_requires_a_reason_refuses_an_answer_without_one(server):
    # Given an interrupt raised with reason_required=True
    thread_id, interrupt_id = paused_refund(server, graph="explained", values={"draft": "Q3"})
    url = f"/approvals/{interrupt_id}/decision"

    # When a reviewer approves without a reason, with a blank one, then with one
    with server.http("reviewer") as reviewer:
        without = reviewer.post(url, json={"decision": "approve"})
        blank = reviewer.post(url, json={"decision": "approve", "reason": "  "})
        given = reviewer.post(url, json={"decision": "approve", "reason": "Figures checked"})

    # Then the first two are 422 naming the field, and only the third is recorded
    for refused in (without, blank):
        assert refused.status_code == 422
        assert refused.json()["detail"].startswith("Invalid body.reason: Interrupt ")
        assert "asks for a reason" in refused.json()["detail"]
    assert given.status_code == 200
    assert [e.reason for e in decisions_recorded(server, thread_id)] == ["Figures checked"]
    output = server.sdk("agent").runs.join(thread_id, given.json()["run_id"])
    assert output == {"draft": "Q3", "published": True}


def test_a_resume_run_on_an_interrupt_that_requires_a_reason_needs_one_in_its_config(server):
    # Given an interrupt raised with reason_required=True
    thread_id, _interrupt = paused_refund(server, graph="explained", values={"draft": "Q4"})
    url = f"/threads/{thread_id}/runs/wait"
    resume = {"assistant_id": "explained", "command": {"resume": False}}

    # When the reviewer resumes it through a run without a reason, then with one
    with server.http("reviewer") as reviewer:
        without = reviewer.post(url, json=resume)
        configurable = {"reason": "Numbers wrong", "decision": "reject"}
        given = reviewer.post(url, json={**resume, "config": {"configurable": configurable}})

    # Then the first is 422 naming where the reason goes, the second recorded
    assert without.status_code == 422
    assert "Invalid body.config.configurable.reason" in without.json()["detail"]
    assert given.status_code == 200
    assert given.json()["published"] is False
    assert [e.reason for e in decisions_recorded(server, thread_id)] == ["Numbers wrong"]


def test_reject_and_edit_resume_the_node_with_their_values(server):
    thread_id, interrupt_id = paused_refund(server)
    with server.http("reviewer") as reviewer:
        answer = reviewer.post(f"/approvals/{interrupt_id}/decision", json={"decision": "reject"})
    output = server.sdk("agent").runs.join(thread_id, answer.json()["run_id"])
    assert output["outcome"] == "Refund denied by reviewer."
    values = {"refund_amount": 70.0, "approved": False}
    thread_id, interrupt_id = paused_refund(server, graph="refund_approval", values=values)
    with server.http("reviewer") as reviewer:
        missing = reviewer.post(f"/approvals/{interrupt_id}/decision", json={"decision": "edit"})
        edited = reviewer.post(
            f"/approvals/{interrupt_id}/decision",
            json={"decision": "edit", "resume": {"approved_amount": 50}, "reason": "partial"},
        )
    assert missing.status_code == 422
    assert "body.resume" in missing.json()["detail"]
    output = server.sdk("agent").runs.join(thread_id, edited.json()["run_id"])
    assert output["approved"] == {"approved_amount": 50}
    assert decisions_recorded(server, thread_id)[0].decision == "edit"


def test_unknown_and_cancelled_interrupts_are_refused_and_recorded(server):
    with server.http("auditor") as auditor:
        before = len(auditor.get("/audit/refusals", params={"limit": 1000}).json()["data"])
    with server.http("reviewer") as reviewer:
        unknown = reviewer.post(f"/approvals/{'0' * 32}/decision", json={"decision": "approve"})
        thread_id, interrupt_id = paused_refund(server)
        cancelled = reviewer.post(f"/threads/{thread_id}/cancel", json={"reason": "fraud"})
        stale = reviewer.post(f"/approvals/{interrupt_id}/decision", json={"decision": "approve"})
        queue = reviewer.get(
            "/approvals", params={"wait_for": cancelled.headers["X-Holdpoint-Position"]}
        )
    assert unknown.status_code == 404
    assert cancelled.status_code == 200
    assert cancelled.json()["cancelled_by"] == {"id": "reviewer", "role": "reviewer"}
    assert stale.status_code == 409
    assert "cancelled by reviewer" in stale.json()["detail"]
    assert interrupt_id not in {row["interrupt_id"] for row in queue.json()["data"]}
    with server.http("auditor") as auditor:
        refusals = auditor.get("/audit/refusals", params={"limit": 1000}).json()["data"]
    reasons = [r["reason"] for r in refusals[before:]]
    assert reasons == ["unknown_interrupt", "stale_interrupt"]
    assert refusals[-1]["principal_id"] == "reviewer"
    assert refusals[-1]["target"] == interrupt_id


def test_a_stop_without_a_reason_is_a_422_and_the_thread_stays_paused(server):
    thread_id, interrupt_id = paused_refund(server)
    head = server.head()
    with server.http("reviewer") as reviewer:
        for body in ({}, {"reason": None}, {"reason": "  "}):
            refused = reviewer.post(f"/threads/{thread_id}/cancel", json=body)
            assert refused.status_code == 422
            assert refused.json()["type"].endswith("reason-required")
            assert "needs a reason" in refused.json()["detail"]
        assert server.head() == head  # the refusals recorded nothing
        queue = reviewer.get("/approvals").json()["data"]  # (a read: on record)
    assert interrupt_id in {row["interrupt_id"] for row in queue}


def test_a_resume_through_a_run_on_a_cancelled_thread_is_refused_and_recorded(server):
    # Given a paused thread the reviewer cancelled
    thread_id, _interrupt = paused_refund(server)
    with server.http("reviewer") as reviewer:
        assert reviewer.post(f"/threads/{thread_id}/cancel", json={"reason": "fraud"}).is_success
    with server.http("auditor") as auditor:
        before = len(auditor.get("/audit/refusals", params={"limit": 1000}).json()["data"])

    # When the reviewer resumes it through the LangGraph runs endpoint
    with server.http("reviewer") as reviewer:
        answer = reviewer.post(
            f"/threads/{thread_id}/runs/wait",
            json={"assistant_id": "refund", "command": {"resume": True}},
        )

    # Then it is a conflict, nothing is decided, and the refusal is on record
    assert answer.status_code == 409
    assert decisions_recorded(server, thread_id) == []
    with server.http("auditor") as auditor:
        refusals = auditor.get("/audit/refusals", params={"limit": 1000}).json()["data"]
    assert [(r["reason"], r["principal_id"]) for r in refusals[before:]] == [
        ("stale_interrupt", "reviewer")
    ]


# -- who decides: the API key, never the body --------------------------------------


def test_a_decision_whose_body_names_a_decider_is_refused_and_records_nothing(server):
    # Given a paused thread
    thread_id, interrupt_id = paused_refund(server)
    url = f"/approvals/{interrupt_id}/decision"

    # When a reviewer's decision names someone else as the decider, in either field
    with server.http("reviewer") as reviewer:
        answers = [
            reviewer.post(url, json={"decision": "approve", field: value})
            for field, value in [
                ("actor", {"id": "ceo", "role": "admin"}),
                ("decided_by", {"id": "ceo", "role": "admin"}),
            ]
        ]

    # Then each is 422 naming the field, and nothing is decided
    for answer, field in zip(answers, ("actor", "decided_by"), strict=True):
        assert answer.status_code == 422
        assert answer.json()["detail"].startswith(f"Invalid body.{field}: ")
    assert decisions_recorded(server, thread_id) == []


def test_a_resume_run_records_the_keys_principal_whatever_actor_its_body_names(server):
    # Given a paused thread
    thread_id, _interrupt = paused_refund(server)
    ceo = {"id": "ceo", "role": "admin"}

    # When a reviewer resumes it with a run whose body names another actor everywhere it can
    with server.http("reviewer") as reviewer:
        answer = reviewer.post(
            f"/threads/{thread_id}/runs/wait",
            json={
                "assistant_id": "refund",
                "command": {"resume": True},
                "actor": ceo,
                "config": {"configurable": {"actor": ceo, "reason": "ok"}},
            },
        )

    # Then the decision is recorded as the reviewer's, the key's principal
    assert answer.status_code == 200, answer.text
    [decision] = decisions_recorded(server, thread_id)
    assert (decision.actor["id"], decision.actor["role"]) == ("reviewer", "reviewer")
    assert decision.reason == "ok"


# -- refusals of answers sent as runs, recorded as a decision's ---------------------


def test_a_resume_run_on_an_unknown_thread_is_404_and_recorded(server):
    # Given a thread id nobody created
    position = server.head()

    # When a reviewer resumes it through a run
    with server.http("reviewer") as reviewer:
        answer = reviewer.post(
            "/threads/never-created/runs/wait",
            json={"assistant_id": "refund", "command": {"resume": True}},
        )

    # Then it is 404, and the attempt is on record as an answer to nothing
    assert answer.status_code == 404
    assert [
        (r["principal_id"], r["reason"], r["target"]) for r in refusals_after(server, position)
    ] == [("reviewer", "unknown_interrupt", "never-created")]


def test_an_answer_to_a_busy_thread_is_409_and_recorded_by_either_endpoint(tmp_path):
    # Given a paused thread whose lease another process's run holds for longer than the
    # server waits
    with running_server(f"sqlite:///{tmp_path / 'h.db'}", busy_wait_timeout=0.1) as busy:
        thread_id, interrupt_id = paused_refund(busy)
        position = busy.head()
        runs = busy.services.runs.store
        holder = StoredRun("run-elsewhere", thread_id, "refund", "refund", request={})
        assert runs.open(holder, "another-process", ttl=60, enqueue=False).started
        try:
            # When a reviewer answers by a decision, then by a resume run
            with busy.http("reviewer") as reviewer:
                decided = reviewer.post(
                    f"/approvals/{interrupt_id}/decision", json={"decision": "approve"}
                )
                resumed = reviewer.post(
                    f"/threads/{thread_id}/runs/wait",
                    json={"assistant_id": "refund", "command": {"resume": True}},
                )
        finally:
            runs.finish(holder.run_id, thread_id, "another-process", "success", {}, None)

        # Then both are 409 thread-busy, nothing is decided, and both refusals are on record
        for answer in (decided, resumed):
            assert answer.status_code == 409, answer.text
            assert answer.json()["type"].endswith("/thread-busy")
        assert decisions_recorded(busy, thread_id) == []
        recorded = refusals_after(busy, position)
        assert [(r["principal_id"], r["reason"], r["action"]) for r in recorded] == [
            ("reviewer", "conflict", f"POST /approvals/{interrupt_id}/decision"),
            ("reviewer", "conflict", f"POST /threads/{thread_id}/runs/wait"),
        ]
        assert [r["message"] for r in recorded] == [
            decided.json()["detail"],
            resumed.json()["detail"],
        ]
