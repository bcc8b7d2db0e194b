"""Custom roles and keys with an authority scope, over HTTP on a real server.

Given a server configured with a custom role `manager` (read, queue, decide) and a graph
whose refunds over 500 are asked of a manager, naming its amount field: a manager's key
decides them, and may after an escalation to manager too; the chain ends by its terminal
rule when no one does. A key limited to other graphs, or to smaller amounts, is refused
(403, `out_of_scope`, on record) and changes nothing; a decision shows the decider's
competence attestation.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any, TypedDict

import pytest

from api.cli.serve import SettingsError, server_settings
from domain.access.role_catalogue import RoleCatalogue
from domain.graph import END, START, StateGraph
from domain.record.thread import WorkflowThread
from domain.types import interrupt
from service.graph_loader import read_config
from tests.api.http_harness import server_on

ROLES = {"manager": {"permissions": ["read", "queue", "decide"]}}


class Refund(TypedDict):
    amount: float
    approved: Any


def large_refunds(store: Any) -> dict[str, Any]:
    """Refunds asked of a manager, escalated to one when a reviewer does not answer."""

    def ask(state: Refund) -> dict[str, Any]:
        question = {"amount": state["amount"], "customer": "globex"}
        role = "manager" if state["amount"] > 500 else None
        escalation = "escalate:manager,then:reject"
        answer = interrupt(question, required_role=role, deadline=600, on_expiry=escalation)
        return {"approved": answer}

    builder = StateGraph(Refund)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    graph = builder.compile(checkpointer=store, name="large_refund")
    graph.set_oversight(amount_field="amount")
    return {"large_refund": graph}


@pytest.fixture(params=["sqlite", "postgres"])
def server(request, tmp_path):
    with server_on(request.param, tmp_path, extra=large_refunds, roles=ROLES) as running:
        yield running


def paused(server, amount: float) -> tuple[str, str]:
    """A refund of `amount`, started by the agent and paused at its question."""
    agent = server.sdk("agent")
    thread_id = agent.threads.create()["thread_id"]
    output = agent.runs.wait(thread_id, "large_refund", input={"amount": amount, "approved": None})
    return thread_id, output["__interrupt__"][0]["id"]


def key(server, principal: str, role: str, **scope: Any) -> dict[str, str]:
    _, raw = server.services.keyring.create(principal, role, **scope)
    return {"x-api-key": raw}


def decide(server, headers: dict[str, str], interrupt_id: str, decision: str = "approve") -> Any:
    with server.http(headers=headers) as client:
        body = {"decision": decision, "reason": "checked"}
        return client.post(f"/approvals/{interrupt_id}/decision", json=body)


def answers(server, thread_id: str) -> list[Any]:
    return [
        e
        for e in server.store.thread_events(thread_id)
        if isinstance(e, WorkflowThread.InterruptResumed)
    ]


def test_the_configured_roles_are_recorded_once_with_the_operator(server):
    [configured] = server.store.events.get(RoleCatalogue.create_id())
    assert isinstance(configured, RoleCatalogue.RolesConfigured)
    assert configured.roles == {"manager": ["read", "decide", "queue"]}
    assert configured.actor is not None
    assert configured.actor["via"] == "local"


def test_a_manager_decides_what_is_asked_of_a_manager_and_a_reviewer_may_not(server):
    # Given a refund of 800, asked of a manager, and a manager's key
    thread_id, interrupt_id = paused(server, 800)
    manager = key(server, "maya", "manager")

    # When a reviewer tries, then a manager answers
    refused = decide(server, {"x-api-key": server.keys["reviewer"]}, interrupt_id)
    decided = decide(server, manager, interrupt_id)

    # Then the reviewer was refused for the role, and the manager's answer is on record
    assert refused.status_code == 403
    assert refused.json()["reason"] == "wrong_role"
    assert decided.status_code == 200, decided.text
    assert decided.json()["decided_by"] == {"id": "maya", "role": "manager"}
    [answer] = answers(server, thread_id)
    assert (answer.actor["id"], answer.actor["role"]) == ("maya", "manager")


def test_a_manager_may_read_the_queue_but_not_run_or_audit(server):
    manager = key(server, "maya", "manager")
    with server.http(headers=manager) as client:
        assert client.get("/approvals").status_code == 200
        started = client.post("/runs/wait", json={"assistant_id": "large_refund", "input": {}})
        audit = client.get("/audit/refusals")
    assert started.status_code == 403
    assert "that needs agent or admin" in started.json()["detail"]
    assert audit.status_code == 403


def test_an_escalation_to_manager_is_answered_by_a_manager(server):
    # Given a refund of 300 (asked of reviewers), whose deadline passes unanswered
    thread_id, interrupt_id = paused(server, 300)
    later = datetime.now(UTC) + timedelta(minutes=11)
    server.store.expire(thread_id, interrupt_id, later)  # as the deadline worker would
    assert server.store.thread(thread_id).interrupts[interrupt_id]["required_role"] == "manager"

    # When a reviewer, then a manager answers it
    refused = decide(server, {"x-api-key": server.keys["reviewer"]}, interrupt_id)
    decided = decide(server, key(server, "maya", "manager"), interrupt_id)

    # Then only the manager's answer is taken
    assert refused.status_code == 403
    assert decided.status_code == 200, decided.text
    [answer] = answers(server, thread_id)
    assert answer.actor["role"] == "manager"


def test_an_escalation_to_manager_no_one_answers_ends_by_its_terminal_rule(server):
    thread_id, interrupt_id = paused(server, 300)
    now = datetime.now(UTC)

    # When both deadlines pass: the first escalates to manager, the second ends the chain
    server.store.expire(thread_id, interrupt_id, now + timedelta(minutes=11))
    server.store.expire(thread_id, interrupt_id, now + timedelta(minutes=22))

    events = server.store.thread_events(thread_id)
    expiries = [e.rule for e in events if isinstance(e, WorkflowThread.InterruptExpired)]
    assert [rule["action"] for rule in expiries] == ["escalate", "decide"]
    assert expiries[0]["role"] == "manager"
    assert (expiries[1]["decision"], expiries[1]["resume"]) == ("reject", False)
    assert server.store.thread(thread_id).interrupts == {}
    assert decide(server, key(server, "maya", "manager"), interrupt_id).status_code in (404, 409)


@pytest.mark.parametrize(
    ("scope", "says"),
    [
        ({"graphs": ["refund"]}, "Graph 'large_refund' is outside the scope"),
        ({"max_amount": 500.0}, "The amount 800 (amount) is above the limit"),
    ],
)
def test_a_decision_outside_the_keys_scope_is_refused_on_record_and_changes_nothing(
    server, scope, says
):
    # Given a refund of 800, and a manager's key limited to another graph or to 500
    thread_id, interrupt_id = paused(server, 800)
    limited = key(server, "lim", "manager", **scope)
    before = server.event_count(thread_id)

    # When it decides
    refused = decide(server, limited, interrupt_id)

    # Then 403 with the reason, the refusal on record, and the thread unchanged
    assert refused.status_code == 403, refused.text
    assert refused.json()["reason"] == "out_of_scope"
    assert says in refused.json()["detail"]
    assert server.event_count(thread_id) == before
    with server.http("auditor") as auditor:
        refusals = auditor.get("/audit/refusals", params={"limit": 1000}).json()["data"]
    assert (refusals[-1]["reason"], refusals[-1]["principal_id"]) == ("out_of_scope", "lim")


def test_a_key_within_its_scope_decides_and_the_decision_shows_scope_and_attestation(server):
    # Given a manager's key for this graph up to 1000, attested by a training
    thread_id, interrupt_id = paused(server, 800)
    attested = key(
        server,
        "maya",
        "manager",
        graphs=["large_refund"],
        max_amount=1000.0,
        attestation_text="Refund training 2026",
        attested_on=date(2026, 1, 15),
    )

    # When it decides
    decided = decide(server, attested, interrupt_id)

    # Then the decision on record carries the key's scope and attestation
    assert decided.status_code == 200, decided.text
    [answer] = answers(server, thread_id)
    assert answer.actor["attestation"] == {
        "text": "Refund training 2026",
        "attested_on": "2026-01-15",
    }
    assert answer.actor["scope"] == {"graphs": ["large_refund"], "max_amount": 1000.0}


def test_a_config_naming_an_unknown_permission_stops_the_start_naming_it(tmp_path):
    # Given a holdpoint.toml whose manager role names a permission that does not exist
    config = tmp_path / "holdpoint.toml"
    config.write_text('[roles.manager]\npermissions = ["read", "aprove"]\n')
    _, server_table = read_config(config)

    # When the server's settings are made from it, then the start is refused, naming it
    with pytest.raises(SettingsError, match="Role 'manager' names an unknown permission 'aprove'"):
        server_settings(str(config), server_table, {})


def test_the_roles_of_a_config_are_the_servers(tmp_path):
    config = tmp_path / "holdpoint.toml"
    config.write_text('[roles.manager]\npermissions = ["decide", "read"]\n')
    _, server_table = read_config(config)

    settings = server_settings(str(config), server_table, {})

    assert settings.roles.permissions("manager") == ("read", "decide")
