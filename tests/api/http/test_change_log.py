"""The auditors' change log (`GET /audit/changes`): given changes outside threads made
through the SDK (memory items, a cron, an assistant), then each is listed once, in log
order, with what changed, who changed it and what the event says; filtered by kind and
by actor, paged, and for auditors only."""

from __future__ import annotations

import pytest

from tests.api.http_harness import running_server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("store")
    with running_server(f"sqlite:///{folder / 'holdpoint.db'}") as running:
        agent, admin = running.sdk("agent"), running.sdk("admin")
        agent.store.put_item(["users", "u-1"], "prefs", {"theme": "dark"})
        admin.store.put_item(["users", "u-1"], "prefs", {"theme": "light"})
        agent.store.delete_item(["users", "u-1"], "prefs")
        thread_id = agent.threads.create()["thread_id"]
        cron = agent.crons.create_for_thread(thread_id, "refund", schedule="0 9 * * *", input={})
        agent.crons.delete(cron["cron_id"])
        made = admin.assistants.create("refund", context={"tier": "gold"})
        admin.assistants.update(made["assistant_id"], name="Gold")
        yield running


def changes(server, **query):
    with server.http("auditor") as auditor:
        answer = auditor.get("/audit/changes", params=query)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_each_change_outside_threads_is_listed_once_in_log_order_with_who(server):
    listed = changes(server)["data"]
    assert [(c["kind"], c["event"], c["actor"]["id"]) for c in listed] == [
        ("memory", "ItemStored", "agent"),
        ("memory", "ItemChanged", "admin"),
        ("memory", "ItemDeleted", "agent"),
        ("cron", "CronScheduled", "agent"),
        ("cron", "CronDeleted", "agent"),
        ("assistant", "AssistantCreated", "admin"),
        ("assistant", "AssistantUpdated", "admin"),
    ]
    assert [c["position"] for c in listed] == sorted(c["position"] for c in listed)
    assert {c["subject"] for c in listed[:3]} == {"users.u-1/prefs"}
    assert listed[1]["detail"] == {"value": {"theme": "light"}}
    assert listed[6]["detail"]["name"] == "Gold"
    assert listed[6]["subject"] == listed[5]["subject"] == listed[5]["detail"]["assistant_id"]


def test_changes_are_filtered_by_kind_and_actor_and_paged(server):
    assert {c["kind"] for c in changes(server, kind="cron")["data"]} == {"cron"}
    by_admin = changes(server, actor="admin")["data"]
    assert [c["event"] for c in by_admin] == ["ItemChanged", "AssistantCreated", "AssistantUpdated"]
    first = changes(server, limit=2)
    rest = changes(server, after=first["next_after"])
    assert [c["event"] for c in first["data"] + rest["data"]] == [
        c["event"] for c in changes(server)["data"]
    ]
    assert rest["next_after"] is None


def test_only_auditors_read_the_change_log(server):
    for who in ("agent", "reviewer"):
        with server.http(who) as client:
            assert client.get("/audit/changes").status_code == 403
    with server.http("auditor") as auditor:
        assert auditor.get("/audit/changes", params={"kind": "thread"}).status_code == 422
