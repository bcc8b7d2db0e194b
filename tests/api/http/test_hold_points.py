"""Hold points over HTTP: issue 19's attacks with an agent's key, as written, each
refused (403, the refusal on record, nothing else recorded) or made harmless. On SQLite
and PostgreSQL, through raw HTTP and the official LangGraph SDK."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from langgraph_sdk.errors import PermissionDeniedError

from domain.oversight.hold_points import question_digest
from domain.record.thread import WorkflowThread
from tests.api.http_harness import postgres_schema_url, running_server, server_on


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server(request, tmp_path_factory):
    with server_on(request.param, tmp_path_factory.mktemp("store")) as running:
        yield running


def paused(server, graph="refund", values=None, who="agent"):
    """A thread `who` started, paused at its interrupt: (thread id, interrupt)."""
    sdk = server.sdk(who)
    thread_id = sdk.threads.create()["thread_id"]
    output = sdk.runs.wait(thread_id, graph, input=values or {"refund_amount": 250})
    return thread_id, output["__interrupt__"][0]


def refusals_after(server, position):
    with server.http("auditor") as auditor:
        data = auditor.get("/audit/refusals", params={"after": position, "limit": 1000}).json()
    return [(r["principal_id"], r["reason"], r["action"]) for r in data["data"]]


def names(server, thread_id):
    return [type(e).__name__ for e in server.store.thread_events(thread_id)]


def decide(server, who, interrupt_id, **body):
    with server.http(who) as client:
        return client.post(f"/approvals/{interrupt_id}/decision", json=body)


# -- (a) the agent edits what the reviewer is asked about -------------------


def test_an_agent_may_not_edit_the_amount_of_a_paused_refund(server):
    # Given the refund paused on "Approve a $250 refund?"
    thread_id, asked = paused(server)
    before, position = names(server, thread_id), server.head()

    # When the agent raises the amount
    with server.http("agent") as agent:
        refused = agent.post(
            f"/threads/{thread_id}/state", json={"values": {"refund_amount": 250000}}
        )

    # Then 403, saying why; only the refusal is recorded
    assert refused.status_code == 403
    problem = refused.json()
    assert problem["reason"] == "hold_point"
    assert f"interrupt {asked['id']} of node 'check_and_process' (pending)" in problem["detail"]
    assert "principal 'agent' has role 'agent'" in problem["detail"]
    assert names(server, thread_id) == before
    assert refusals_after(server, position) == [
        ("agent", "hold_point", f"POST /threads/{thread_id}/state")
    ]
    # And the reviewer's approval of what the inbox shows pays what it showed
    decided = decide(server, "reviewer", asked["id"], decision="approve")
    output = server.sdk("agent").runs.join(thread_id, decided.json()["run_id"])
    assert output["outcome"] == "Refund of $250 processed."


def test_the_sdks_update_state_is_refused_for_an_agent_too(server):
    thread_id, _ = paused(server)

    with pytest.raises(PermissionDeniedError, match="stands at a hold point"):
        server.sdk("agent").threads.update_state(thread_id, {"refund_amount": 250000})


def test_an_approval_does_not_apply_to_a_question_edited_since(server):
    # Given a reviewer edits the amount after the inbox showed $250
    thread_id, asked = paused(server)
    server.sdk("reviewer2").threads.update_state(thread_id, {"refund_amount": 250000})

    # When another reviewer approves the question shown
    decided = decide(server, "reviewer", asked["id"], decision="approve")
    output = server.sdk("agent").runs.join(thread_id, decided.json()["run_id"])

    # Then nothing is paid: the node asks about the new amount, a new pending approval
    assert decided.json()["payload_digest"] == question_digest(asked["value"])
    assert "outcome" not in output
    [again] = output["__interrupt__"]
    assert again["value"] == {"question": "Approve a $250000 refund?"}
    with server.http("reviewer") as reviewer:
        queue = reviewer.get("/approvals", params={"graph_id": "refund"}).json()["data"]
    assert again["id"] in {item["interrupt_id"] for item in queue}
    assert asked["id"] not in {item["interrupt_id"] for item in queue}
    # And who edited it may not decide the new question
    refused = decide(server, "reviewer2", again["id"], decision="approve")
    assert (refused.status_code, refused.json()["reason"]) == (403, "separation_of_duties")


def test_a_decision_on_another_payload_is_a_409_naming_both(server):
    thread_id, asked = paused(server)
    shown = question_digest({"question": "Approve a $25 refund?"})

    refused = decide(server, "reviewer", asked["id"], decision="approve", payload_digest=shown)

    assert refused.status_code == 409
    assert refused.json()["type"].endswith("/question-changed")
    assert shown in refused.json()["detail"]
    assert question_digest(asked["value"]) in refused.json()["detail"]
    assert "InterruptResumed" not in names(server, thread_id)
    accepted = decide(
        server,
        "reviewer",
        asked["id"],
        decision="approve",
        payload_digest=question_digest(asked["value"]),
    )
    assert accepted.status_code == 200


# -- (b) an edit as_node on a new thread --------------------------------------


def created(server, graph="refund_approval"):
    with server.http("agent") as agent:
        body = {"metadata": {"graph_id": graph}}
        return agent.post("/threads", json=body).json()["thread_id"]


def test_an_agent_may_not_stand_in_for_the_approval_node(server):
    # Given a new refund_approval thread
    thread_id = created(server)
    position = server.head()

    # When the agent writes the approval as the node, then continues the thread
    with server.http("agent") as agent:
        refused = agent.post(
            f"/threads/{thread_id}/state",
            json={"values": {"approved": True}, "as_node": "request_approval"},
        )
        continued = agent.post(
            f"/threads/{thread_id}/runs/wait",
            json={"assistant_id": "refund_approval", "input": None},
        )

    # Then the edit is refused, and process_refund never runs
    assert refused.status_code == 403
    assert "decision about the flow" in refused.json()["detail"]
    assert ("agent", "hold_point", f"POST /threads/{thread_id}/state") in refusals_after(
        server, position
    )
    assert continued.status_code in (200, 422)
    events = server.store.thread_events(thread_id)
    assert not [e for e in events if getattr(e, "node", None) == "process_refund"]


def test_an_edit_as_node_by_a_reviewer_needs_a_reason_and_is_a_decision(server):
    thread_id = created(server)
    body = {"values": {"approved": True}, "as_node": "request_approval"}
    with server.http("reviewer") as reviewer:
        without = reviewer.post(f"/threads/{thread_id}/state", json=body)
        accepted = reviewer.post(
            f"/threads/{thread_id}/state", json={**body, "reason": "Approved on the phone"}
        )

    assert without.status_code == 422
    assert without.json()["detail"].startswith("Invalid body.reason:")
    assert accepted.status_code == 200
    edit = server.store.thread_events(thread_id)[-1]
    assert isinstance(edit, WorkflowThread.StateEdited)
    assert (edit.decision, edit.actor["id"], edit.reason) == (
        "edit",
        "reviewer",
        "Approved on the phone",
    )


# -- (c) a fork past an approval ---------------------------------------------


def approved_thread(server):
    """A refund_approval thread, approved and paid; the checkpoint between the two."""
    thread_id, asked = paused(server, "refund_approval", {"refund_amount": 250, "approved": False})
    decided = decide(server, "reviewer", asked["id"], decision="approve")
    server.sdk("agent").runs.join(thread_id, decided.json()["run_id"])
    history = server.sdk("agent").threads.get_history(thread_id, limit=20)
    [between] = [h for h in history if h["next"] == ["process_refund"]]
    return thread_id, between["checkpoint_id"]


def test_an_agent_may_not_fork_past_an_approval_with_new_values(server):
    thread_id, checkpoint = approved_thread(server)
    position = server.head()

    with server.http("agent") as agent:
        edited = agent.post(
            f"/threads/{thread_id}/state",
            json={"values": {"refund_amount": 250000}, "checkpoint_id": checkpoint},
        )
        ran = agent.post(
            f"/threads/{thread_id}/runs/wait",
            json={"assistant_id": "refund_approval", "input": None, "checkpoint_id": checkpoint},
        )

    assert (edited.status_code, edited.json()["reason"]) == (403, "hold_point")
    assert (ran.status_code, ran.json()["reason"]) == (403, "hold_point")
    assert "would run under that decision" in ran.json()["detail"]
    assert [r[:2] for r in refusals_after(server, position)] == [
        ("agent", "hold_point"),
        ("agent", "hold_point"),
    ]


# -- (d) the decision's kind is the truth --------------------------------------


def test_a_reject_that_resumes_with_true_is_a_422_naming_both_fields(server):
    thread_id, asked = paused(server)

    refused = decide(server, "reviewer", asked["id"], decision="reject", resume=True)

    assert refused.status_code == 422
    detail = refused.json()["detail"]
    assert detail.startswith("Invalid body.resume: it contradicts body.decision")
    assert "InterruptResumed" not in names(server, thread_id)


def test_a_resume_run_checks_its_decision_as_the_endpoint_does(server):
    thread_id, _ = paused(server)
    body = {
        "assistant_id": "refund",
        "command": {"resume": True},
        "config": {"configurable": {"decision": "reject", "reason": "no"}},
    }
    with server.http("reviewer") as reviewer:
        refused = reviewer.post(f"/threads/{thread_id}/runs/wait", json=body)

    assert refused.status_code == 422
    assert refused.json()["detail"].startswith(
        "Invalid body.command.resume: it contradicts body.config.configurable.decision"
    )
    assert "InterruptResumed" not in names(server, thread_id)


# -- (e) separation of duties covers who fed the thread ----------------------


def test_whoever_sent_the_input_may_not_approve(server):
    # Given the agent creates the thread, and an admin sends its input
    with server.http("agent") as agent:
        thread_id = agent.post("/threads", json={"metadata": {"graph_id": "refund"}}).json()[
            "thread_id"
        ]
    output = server.sdk("admin").runs.wait(thread_id, "refund", input={"refund_amount": 250})
    asked = output["__interrupt__"][0]

    # When that admin approves
    refused = decide(server, "admin", asked["id"], decision="approve")

    # Then
    assert (refused.status_code, refused.json()["reason"]) == (403, "separation_of_duties")
    assert "'admin' sent input to thread" in refused.json()["detail"]
    assert decide(server, "reviewer", asked["id"], decision="approve").status_code == 200


# -- four eyes ---------------------------------------------------------------


def test_four_eyes_needs_two_different_approvers(server):
    thread_id, asked = paused(server, "four_eyes", {"amount": 900.0})

    first = decide(server, "reviewer", asked["id"], decision="approve")
    again = decide(server, "reviewer", asked["id"], decision="approve")
    with server.http("reviewer") as reviewer:
        [row] = [
            item
            for item in reviewer.get("/approvals", params={"graph_id": "four_eyes"}).json()["data"]
            if item["interrupt_id"] == asked["id"]
        ]
    second = decide(server, "reviewer2", asked["id"], decision="approve")
    output = server.sdk("agent").runs.join(thread_id, second.json()["run_id"])

    assert first.status_code == 200
    assert first.json()["approvals"] == {"given": 1, "needed": 2}
    assert first.json()["resumed"] is False
    assert (again.status_code, again.json()["reason"]) == (403, "four_eyes")
    assert (row["approvals_given"], row["approvals_needed"]) == (1, 2)
    assert second.json()["resumed"] is True
    assert output == {"amount": 900.0, "paid": True}
    assert [n for n in names(server, thread_id) if n.startswith("Interrupt")] == [
        "InterruptRaised",
        "InterruptApproved",
        "InterruptResumed",
    ]


def test_four_eyes_is_ended_by_one_rejection(server):
    thread_id, asked = paused(server, "four_eyes", {"amount": 900.0})

    decide(server, "reviewer", asked["id"], decision="approve")
    rejected = decide(server, "reviewer2", asked["id"], decision="reject", reason="no")
    output = server.sdk("agent").runs.join(thread_id, rejected.json()["run_id"])

    assert output == {"amount": 900.0, "paid": False}


# -- forks: ids and the first checkpoint ---------------------------------------


@pytest.mark.parametrize("fork_id", ["evil/../x?#%", 42])
def test_a_fork_thread_id_follows_the_thread_id_rule(server, fork_id):
    thread_id, _ = paused(server)
    history = server.sdk("agent").threads.get_history(thread_id)
    body = {
        "assistant_id": "refund",
        "input": None,
        "checkpoint_id": history[-1]["checkpoint_id"],
        "config": {"configurable": {"fork_thread_id": fork_id}},
    }
    with server.http("agent") as agent:
        refused = agent.post(f"/threads/{thread_id}/runs/wait", json=body)

    assert refused.status_code == 422
    assert "Invalid fork_thread_id" in refused.json()["detail"]


def test_a_run_from_the_first_checkpoint_replays_the_thread(server):
    sdk = server.sdk("agent")
    thread_id = sdk.threads.create()["thread_id"]
    sdk.runs.wait(thread_id, "refund", input={"refund_amount": 5})
    first = sdk.threads.get_history(thread_id)[-1]
    assert first["next"] == ["__start__"]

    output = sdk.runs.wait(thread_id, "refund", input=None, checkpoint_id=first["checkpoint_id"])

    assert output == {"refund_amount": 5, "outcome": "Refund of $5 processed."}


def test_an_agent_run_with_a_command_at_a_hold_point_is_refused(server):
    thread_id, _ = paused(server)
    before, position = names(server, thread_id), server.head()
    body = {
        "assistant_id": "refund",
        "command": {"update": {"refund_amount": 1}, "goto": "check_and_process"},
    }
    with server.http("agent") as agent:
        refused = agent.post(f"/threads/{thread_id}/runs/wait", json=body)

    assert (refused.status_code, refused.json()["reason"]) == (403, "hold_point")
    assert "A Command(update=..., goto=...)" in refused.json()["detail"]
    assert names(server, thread_id) == before
    assert [r[:2] for r in refusals_after(server, position)] == [("agent", "hold_point")]


def test_the_audit_timeline_shows_each_approval_and_a_question_asked_again(server):
    # Given a four-eyes interrupt approved once, and a refund whose question was edited
    four_eyes_thread, asked = paused(server, "four_eyes", {"amount": 900.0})
    decide(server, "reviewer", asked["id"], decision="approve")
    refund_thread, first = paused(server)
    server.sdk("reviewer2").threads.update_state(refund_thread, {"refund_amount": 260})
    decided = decide(server, "reviewer", first["id"], decision="approve")
    server.sdk("agent").runs.join(refund_thread, decided.json()["run_id"])

    # When the auditor reads the timelines
    with server.http("auditor") as auditor:
        approvals = auditor.get(f"/threads/{four_eyes_thread}/audit").json()["entries"]
        refund = auditor.get(f"/threads/{refund_thread}/audit").json()["entries"]

    # Then
    assert f"reviewer (reviewer) approved {asked['id']}: 1 of 2 approvals" in [
        e["summary"] for e in approvals
    ]
    asked_again = [e for e in refund if e["event"] == "InterruptRaised"][-1]
    assert asked_again["summary"].endswith(f"again in place of {first['id']}")


def test_the_oversight_report_shows_the_hold_points_at_work(server):
    # Given an agent's refused edit, and a question asked again after a reviewer's edit
    thread_id, asked = paused(server)
    with server.http("agent") as agent:
        agent.post(f"/threads/{thread_id}/state", json={"values": {"refund_amount": 9e9}})
    server.sdk("reviewer2").threads.update_state(thread_id, {"refund_amount": 251})
    decided = decide(server, "reviewer", asked["id"], decision="approve")
    server.sdk("agent").runs.join(thread_id, decided.json()["run_id"])

    # When the auditor reads the report
    with server.http("auditor") as auditor:
        report = auditor.get("/reports/oversight", params={"wait_for": server.head()}).json()

    # Then
    assert report["bypass_attempts"]["by_principal"]["agent"] >= 1
    assert asked["id"] in {pair["reasks"] for pair in report["reasked"]["pairs"]}
    assert report["coverage"]["unapplied"] == 0
    assert report["coverage"]["accounted_for"] is True


def test_an_agent_may_not_route_a_new_thread_past_its_approval(server):
    # Given a new refund_approval thread whose values the agent set (no hold point yet)
    thread_id = created(server)
    with server.http("agent") as agent:
        edited = agent.post(
            f"/threads/{thread_id}/state",
            json={"values": {"refund_amount": 250000, "approved": True}},
        )
        position = server.head()
        # When it sends the thread straight to the payment
        refused = agent.post(
            f"/threads/{thread_id}/runs/wait",
            json={"assistant_id": "refund_approval", "command": {"goto": "process_refund"}},
        )

    # Then the payment node never runs, and the refusal is on record
    assert edited.status_code == 200
    assert (refused.status_code, refused.json()["reason"]) == (403, "hold_point")
    events = server.store.thread_events(thread_id)
    assert not [e for e in events if getattr(e, "node", None) == "process_refund"]
    assert [r[:2] for r in refusals_after(server, position)] == [("agent", "hold_point")]


def test_four_eyes_holds_across_two_servers_on_one_database(tmp_path):
    # Given two servers on one PostgreSQL store (their run locks are their own), and an
    # interrupt that needs two approvals
    with postgres_schema_url() as url, running_server(url) as one, running_server(url) as two:
        thread_id, asked = paused(one, "four_eyes", {"amount": 900.0})
        body = {"decision": "approve"}

        # When two reviewers approve at once, one on each; and one of them twice more
        calls = [(one, "reviewer"), (two, "reviewer2"), (two, "reviewer"), (one, "reviewer2")]
        with ThreadPoolExecutor(len(calls)) as pool:
            answers = list(pool.map(lambda c: decide(c[0], c[1], asked["id"], **body), calls))

        # Then exactly two approvals are recorded, by two principals, and the node ran once
        events = one.store.thread_events(thread_id)
        approvals = [
            e for e in events if type(e).__name__ in ("InterruptApproved", "InterruptResumed")
        ]
        assert sorted(e.actor["id"] for e in approvals) == ["reviewer", "reviewer2"]
        assert [type(e).__name__ for e in approvals] == ["InterruptApproved", "InterruptResumed"]
        paid = [
            e
            for e in events
            if type(e).__name__ == "NodeCompleted" and e.node == "four_eyes_payment"
        ]
        assert len(paid) == 1
        statuses = sorted(a.status_code for a in answers)
        assert statuses[:2] == [200, 200]
        assert set(statuses[2:]) <= {403, 409}  # approved twice, or no longer open
