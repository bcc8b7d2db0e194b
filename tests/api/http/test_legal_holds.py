"""Legal holds over HTTP: given a refund paused at its interrupt, when an auditor places
a hold on it, then the hold is listed, shows on the queue item and on the thread's audit
timeline, only an admin lifts it, each with who and why on record; bad scopes, missing
reasons and unknown holds are refused, recording nothing."""

from __future__ import annotations

import pytest

from domain.retention.legal_holds import HOLDS_ID, LegalHolds
from tests.api.http_harness import running_server


@pytest.fixture
def server(tmp_path):
    with running_server(f"sqlite:///{tmp_path / 'holdpoint.db'}") as running:
        yield running


def paused_refund(server, metadata=None):
    agent = server.sdk("agent")
    thread_id = agent.threads.create(metadata=metadata)["thread_id"]
    agent.runs.wait(thread_id, "refund", input={"refund_amount": 300.0})
    return thread_id


def test_a_hold_shows_wherever_its_thread_does_until_an_admin_lifts_it(server):
    thread_id = paused_refund(server, {"customer": "globex"})
    other = paused_refund(server, {"customer": "initech"})
    with server.http("auditor") as auditor:
        placed = auditor.post(
            "/legal-holds", json={"scope": "metadata:customer=globex", "reason": "case 17"}
        )
        assert placed.status_code == 201, placed.text
        assert placed.json() | {"placed_at": None} == {
            "hold_id": "hold-1",
            "scope": "metadata:customer=globex",
            "placed_by": "auditor",
            "reason": "case 17",
            "placed_at": None,
        }
        assert [h["hold_id"] for h in auditor.get("/legal-holds").json()] == ["hold-1"]
        timeline = auditor.get(f"/threads/{thread_id}/audit").json()
        assert [h["hold_id"] for h in timeline["legal_holds"]] == ["hold-1"]
        assert auditor.get(f"/threads/{other}/audit").json()["legal_holds"] == []
    with server.http("reviewer") as reviewer:
        items = reviewer.get("/approvals").json()["data"]
    assert {i["thread_id"]: i["legal_holds"] for i in items} == {thread_id: ["hold-1"], other: []}
    with server.http("auditor") as auditor:
        not_theirs = auditor.post("/legal-holds/hold-1/lift", json={"reason": "closed"})
    assert not_theirs.status_code == 403
    with server.http("admin") as admin:
        lifted = admin.post("/legal-holds/hold-1/lift", json={"reason": "case closed"})
        assert lifted.status_code == 200, lifted.text
        assert admin.get("/legal-holds").json() == []
    events = list(server.store.events.get(HOLDS_ID))
    placed_event, lifted_event = events[1:]
    assert isinstance(placed_event, LegalHolds.LegalHoldPlaced)
    assert (placed_event.actor["id"], placed_event.reason) == ("auditor", "case 17")
    assert isinstance(lifted_event, LegalHolds.LegalHoldLifted)
    assert (lifted_event.actor["id"], lifted_event.reason) == ("admin", "case closed")


@pytest.mark.parametrize(
    ("path", "body", "status", "kind"),
    [
        ("/legal-holds", {"scope": "thread:t-1"}, 422, "reason-required"),
        ("/legal-holds", {"scope": "everything", "reason": "r"}, 422, "invalid-request"),
        ("/legal-holds", {"scope": "all", "reason": "r"}, 422, "invalid-request"),
        ("/legal-holds/hold-9/lift", {"reason": "r"}, 404, "legal-hold-not-found"),
    ],
)
def test_bad_holds_are_refused_and_record_nothing(server, path, body, status, kind):
    head = server.head()
    with server.http("admin") as admin:
        answer = admin.post(path, json=body)
    assert answer.status_code == status, answer.text
    assert answer.json()["type"].endswith(kind)
    assert server.head() == head


def test_agents_and_reviewers_may_not_place_holds(server):
    for role in ("agent", "reviewer"):
        with server.http(role) as client:
            assert (
                client.post(
                    "/legal-holds", json={"scope": "graph:refund", "reason": "r"}
                ).status_code
                == 403
            )
    assert list(server.store.events.get(HOLDS_ID)) == []
