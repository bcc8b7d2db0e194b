"""GET /audit/verify: the whole store or one thread, checked by the same core as the CLI."""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.api.http_harness import server_on


@pytest.fixture
def server(tmp_path):
    with server_on("sqlite", tmp_path) as running:
        yield running


def refund_thread(server, amount: float = 150.0) -> str:
    sdk = server.sdk("agent")
    thread_id = sdk.threads.create()["thread_id"]
    sdk.runs.wait(thread_id, "refund", input={"refund_amount": amount})
    return thread_id


def test_the_whole_store_verifies_with_its_counts(server):
    # Given
    refund_thread(server)
    refund_thread(server)

    # When
    with server.http("auditor") as auditor:
        body = auditor.get("/audit/verify").json()

    # Then
    assert body["ok"] is True
    assert body["scope"] == "store"
    assert body["checked"] == body["threads_checked"] >= 2
    assert body["events_checked"] == server.head()
    assert body["problems"] == []


def test_one_thread_verifies_with_its_event_count(server):
    # Given
    thread_id = refund_thread(server)

    # When
    with server.http("auditor") as auditor:
        body = auditor.get("/audit/verify", params={"thread_id": thread_id}).json()

    # Then
    assert body["ok"] is True
    assert body["scope"] == "thread"
    assert body["threads"][0]["events_checked"] == server.event_count(thread_id)


def test_an_event_altered_in_the_database_is_named_by_thread_and_version(server):
    # Given: an attacker edits the SQLite file directly, triggers dropped first
    thread_id = refund_thread(server)
    path = server.store.env["SQLITE_DBNAME"]
    aggregate_id = server.store.thread_events(thread_id)[0].originator_id.hex
    with sqlite3.connect(path) as db:
        db.execute("DROP TRIGGER stored_events_no_update")
        (state,) = db.execute(
            "SELECT state FROM stored_events WHERE originator_id = ? AND originator_version = 2",
            (aggregate_id,),
        ).fetchone()
        data = json.loads(state)
        data["input"]["refund_amount"] = 1.0
        db.execute(
            "UPDATE stored_events SET state = ? WHERE originator_id = ? AND originator_version = 2",
            (json.dumps(data, separators=(",", ":")).encode(), aggregate_id),
        )

    # When
    with server.http("auditor") as auditor:
        whole = auditor.get("/audit/verify").json()
        one = auditor.get("/audit/verify", params={"thread_id": thread_id}).json()

    # Then
    assert whole["ok"] is False
    assert one["ok"] is False
    problem = {k: whole["problems"][0][k] for k in ("kind", "thread_id", "version")}
    assert problem == {"kind": "altered", "thread_id": thread_id, "version": 2}
    assert whole["threads"][0]["broken_at"] == 2
    assert one["threads"][0]["broken_at"] == 2


@pytest.mark.parametrize(("who", "status"), [("agent", 403), ("reviewer", 403), ("admin", 200)])
def test_only_auditors_and_admins_may_verify(server, who, status):
    with server.http(who) as client:
        assert client.get("/audit/verify").status_code == status


def test_an_unknown_thread_is_404(server):
    with server.http("auditor") as auditor:
        response = auditor.get("/audit/verify", params={"thread_id": "no-such-thread"})
    assert response.status_code == 404
