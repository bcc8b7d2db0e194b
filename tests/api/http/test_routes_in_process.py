"""The fast tier of the HTTP tests: the app itself on a memory store, driven by FastAPI's
TestClient (no socket, no uvicorn), for the status, the problem and the exact `detail`
of the oversight routes. The uvicorn tests (`test_http_*.py`) exercise the real server;
these check what the routes answer, in a fraction of the time."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from api.http.app import create_app
from domain.oversight.hold_points import question_digest
from domain.record.store import open_store
from service.graph_loader import load_graphs
from service.services import Services
from service.settings import ServerSettings
from tests.api.http_graphs import served_test_graphs
from tests.api.http_harness import PRINCIPALS


@pytest.fixture(scope="module")
def app() -> Iterator[tuple[TestClient, dict[str, str]]]:
    store = open_store("memory://")
    graphs = {**load_graphs([], store), **served_test_graphs(store)}
    services = Services.build(ServerSettings(store_url="memory://"), store, graphs)
    keys = {name: services.keyring.create(name, role)[1] for name, role in PRINCIPALS.items()}
    with TestClient(create_app(services)) as client:
        yield client, keys


def call(app, who, method, path, body=None):
    client, keys = app
    return client.request(method, path, json=body, headers={"x-api-key": keys[who]})


def paused(app, amount=250):
    """A refund the agent started, paused at its interrupt: (thread id, interrupt)."""
    thread_id = call(app, "agent", "POST", "/threads", {}).json()["thread_id"]
    body = {"assistant_id": "refund", "input": {"refund_amount": amount}}
    output = call(app, "agent", "POST", f"/threads/{thread_id}/runs/wait", body).json()
    return thread_id, output["__interrupt__"][0]


def test_the_queue_lists_the_interrupt_with_its_digest(app):
    thread_id, asked = paused(app)

    page = call(app, "reviewer", "GET", "/approvals", None)

    [row] = [item for item in page.json()["data"] if item["interrupt_id"] == asked["id"]]
    assert row["thread_id"] == thread_id
    assert row["payload_digest"] == question_digest(asked["value"])
    assert (row["approvals_needed"], row["approvals_given"]) == (1, 0)


def test_an_agents_edit_at_a_hold_point_is_a_403_with_its_reason(app):
    thread_id, asked = paused(app)

    refused = call(app, "agent", "POST", f"/threads/{thread_id}/state", {"values": {"x": 1}})

    assert refused.status_code == 403
    assert refused.headers["content-type"] == "application/problem+json"
    assert refused.json()["reason"] == "hold_point"
    assert refused.json()["detail"] == (
        f"Thread {thread_id!r} stands at a hold point: interrupt {asked['id']} of node "
        "'check_and_process' (pending). An edit of the state needs a principal who may "
        "decide it (role 'reviewer' or admin); principal 'agent' has role 'agent'; only "
        "this refusal was recorded"
    )


def test_a_reject_that_resumes_with_true_is_a_422_naming_both_fields(app):
    _, asked = paused(app)

    refused = call(
        app,
        "reviewer",
        "POST",
        f"/approvals/{asked['id']}/decision",
        {"decision": "reject", "resume": True},
    )

    assert refused.status_code == 422
    assert refused.json()["detail"] == (
        "Invalid body.resume: it contradicts body.decision: decision 'reject' resumes with "
        "false, not true: send the decision the value means (edit to change the answer), or "
        "leave resume out"
    )


def test_a_decision_on_another_payload_is_a_409(app):
    _, asked = paused(app)
    shown = question_digest({"question": "another"})

    refused = call(
        app,
        "reviewer",
        "POST",
        f"/approvals/{asked['id']}/decision",
        {"decision": "approve", "payload_digest": shown},
    )

    assert (refused.status_code, refused.json()["reason"]) == (409, "question_changed")


def test_an_approval_names_the_digest_it_answered(app):
    _, asked = paused(app)

    decided = call(
        app, "reviewer", "POST", f"/approvals/{asked['id']}/decision", {"decision": "approve"}
    )

    assert decided.status_code == 200
    assert decided.json()["payload_digest"] == question_digest(asked["value"])
    assert (decided.json()["resume"], decided.json()["resumed"]) == (True, True)


@pytest.mark.parametrize("strategy", ["rollback"])
def test_a_multitask_strategy_not_supported_is_a_422_naming_those_that_are(app, strategy):
    thread_id, _ = paused(app)
    body = {"assistant_id": "refund", "input": None, "multitask_strategy": strategy}

    refused = call(app, "agent", "POST", f"/threads/{thread_id}/runs", body)

    assert refused.status_code == 422
    assert refused.json()["detail"] == (
        f"Invalid body.multitask_strategy: {strategy!r} is not supported (it would delete "
        "the running run's events); use reject (the default: 409 while another run "
        "holds the thread), enqueue or interrupt"
    )


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("on_completion", "delete"),
    ],
)
def test_a_run_option_holdpoint_lacks_is_a_422_naming_it_and_records_nothing(app, option, value):
    thread_id, _ = paused(app)
    events = call(app, "auditor", "GET", f"/threads/{thread_id}/events").json()["events"]
    body = {"assistant_id": "refund", "input": {"refund_amount": 1.0}, option: value}

    refused = call(app, "agent", "POST", f"/threads/{thread_id}/runs", body)

    assert refused.status_code == 422
    assert refused.json()["detail"].startswith(f"Invalid body.{option}: ")
    after = call(app, "auditor", "GET", f"/threads/{thread_id}/events").json()["events"]
    assert after == events


def test_a_run_is_read_back_from_the_store_with_its_attempt(app):
    thread_id, _ = paused(app)
    [run] = call(app, "agent", "GET", f"/threads/{thread_id}/runs").json()

    read = call(app, "agent", "GET", f"/threads/{thread_id}/runs/{run['run_id']}").json()

    assert read == run
    assert (read["status"], read["attempt"], read["taken_over"]) == ("success", 1, [])
    assert read["multitask_strategy"] == "reject"
