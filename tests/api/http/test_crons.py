"""LangGraph's crons over HTTP, driven by the official SDK (`client.crons`): made for a
thread or for new threads, searched, counted, changed and deleted, each on record with
who; and a due cron fired by the server's scheduler starts its run as the cron's maker,
once, however many times the scheduler looks."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import NotFoundError, UnprocessableEntityError

from domain.schedule.cron import cron_uuid
from domain.schedule.crons import Crons
from tests.api.http.test_key_expiry import Later
from tests.api.http_harness import postgres_schema_url, running_server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("store")
    with running_server(f"sqlite:///{folder / 'holdpoint.db'}", cron_poll_seconds=3600) as running:
        yield running


def fire_due(server, cron):
    """The scheduler's pass at the cron's next run date (no waiting for the clock): this
    cron's firings (others may be due by then too)."""
    due = datetime.fromisoformat(cron["next_run_date"].replace("Z", "+00:00"))
    server.services.read_models.catch_up_to_head()  # the scheduler reads the crons' model
    fired = server.services.scheduler.run_once(now=due)
    return [firing for firing in fired if firing.cron.cron_id == cron["cron_id"]]


def wait_for_run(server, thread_id, run_id):
    deadline = time.monotonic() + 30
    while (run := server.services.runs.store.get(run_id)) is None or not run.done:
        assert time.monotonic() < deadline, f"run {run_id} on {thread_id} did not end"
        time.sleep(0.02)
    return run


def test_a_cron_on_a_thread_is_made_found_and_fired_as_its_maker(server):
    agent = server.sdk("agent")
    thread_id = agent.threads.create()["thread_id"]
    cron = agent.crons.create_for_thread(
        thread_id, "refund", schedule="*/5 * * * *", input={"refund_amount": 5.0}
    )
    assert cron["thread_id"] == thread_id
    assert cron["user_id"] == "agent"
    assert cron["next_run_date"].endswith("Z")
    assert cron["enabled"] is True
    found = server.sdk("auditor").crons.search(thread_id=thread_id)
    assert [c["cron_id"] for c in found] == [cron["cron_id"]]
    assert server.sdk("auditor").crons.count(thread_id=thread_id) == 1
    # When the scheduler looks at its due time, twice
    [firing] = fire_due(server, cron)
    assert fire_due(server, cron) == []
    # Then one run ran on the thread, by the cron's maker
    run = wait_for_run(server, thread_id, firing.run_id)
    assert run.status == "success"
    started = [e for e in server.store.thread_events(thread_id) if hasattr(e, "actor")]
    assert started[0].actor["id"] == "agent"
    assert agent.threads.get_state(thread_id)["values"]["refund_amount"] == 5.0
    [moved] = server.sdk("auditor").crons.search(thread_id=thread_id)
    assert moved["next_run_date"] > cron["next_run_date"]


def test_a_cron_without_a_thread_runs_on_a_new_thread_each_time(server):
    agent = server.sdk("agent")
    cron = agent.crons.create("refund", schedule="0 9 * * *", input={"refund_amount": 1.0})
    assert cron["thread_id"] is None
    [first] = fire_due(server, cron)
    wait_for_run(server, first.thread_id, first.run_id)
    assert agent.threads.get(first.thread_id)["metadata"]["graph_id"] == "refund"


def test_a_cron_is_changed_and_deleted_on_record(server):
    agent, admin = server.sdk("agent"), server.sdk("admin")
    cron = agent.crons.create("refund", schedule="0 9 * * *", input={"refund_amount": 2.0})
    changed = admin.crons.update(cron["cron_id"], schedule="30 8 * * *", enabled=False)
    assert (changed["schedule"], changed["enabled"], changed["next_run_date"]) == (
        "30 8 * * *",
        False,
        None,
    )
    admin.crons.delete(cron["cron_id"])
    names = [type(e).__name__ for e in server.store.events.get(cron_uuid(cron["cron_id"]))]
    assert names == ["CronScheduled", "CronUpdated", "CronDeleted"]
    assert [e.actor["id"] for e in list(server.store.events.get(cron_uuid(cron["cron_id"])))] == [
        "agent",
        "admin",
        "admin",
    ]
    with pytest.raises(NotFoundError):
        admin.crons.delete(cron["cron_id"])
    assert cron["cron_id"] not in [c["cron_id"] for c in agent.crons.search(limit=100)]


def test_what_a_cron_cannot_keep_is_a_422_recording_nothing(server):
    agent = server.sdk("agent")
    head = server.head()
    for bad in (
        {"schedule": "every day"},
        {"schedule": "0 9 * * *", "timezone": "Mars/Base"},
        {"schedule": "0 9 * * *", "interrupt_before": ["node"]},
        {"schedule": "0 9 * * *", "webhook": "https://evil.example/"},
        {"schedule": "0 9 * * *", "end_time": datetime(2030, 1, 1)},  # no time zone
        {"schedule": "0 9 * * *", "config": {"configurable": [1]}},
        # the engine's own keys: a resume map would answer the hold point at each firing
        {"schedule": "0 9 * * *", "config": {"configurable": {"__pregel_resume_map": {}}}},
    ):
        with pytest.raises(UnprocessableEntityError):
            agent.crons.create("refund", **bad)
    assert server.head() == head
    cron = agent.crons.create("refund", schedule="0 9 * * *")
    head = server.head()
    with pytest.raises(UnprocessableEntityError, match="__pregel_resume_map"):
        agent.crons.update(cron["cron_id"], config={"configurable": {"__pregel_resume_map": {}}})
    assert server.head() == head
    with server.http("reviewer") as reviewer:
        refused = reviewer.post(
            "/runs/crons", json={"assistant_id": "refund", "schedule": "* * * * *"}
        )
    assert refused.status_code == 403


def test_the_scheduler_fires_a_due_cron_by_itself(tmp_path):
    with running_server(f"sqlite:///{tmp_path / 'h.db'}", cron_poll_seconds=0.05) as server:
        agent = server.sdk("agent")
        thread_id = agent.threads.create()["thread_id"]
        end = datetime.now(UTC) + timedelta(minutes=3)
        agent.crons.create_for_thread(
            thread_id, "refund", schedule="* * * * *", input={"refund_amount": 3.0}, end_time=end
        )
        deadline = time.monotonic() + 75  # due at the next minute
        while not server.services.runs.store.of_thread(thread_id, limit=1):
            assert time.monotonic() < deadline, "the cron did not fire within its minute"
            time.sleep(0.05)


def test_a_cron_whose_makers_key_is_revoked_stops_on_record_and_runs_nothing(server):
    # Given a cron made by a key of its own, which is then revoked
    key_info, raw = server.services.keyring.create("temp-agent", "agent", note="cron test")
    temp = get_sync_client(url=server.url, api_key=raw)
    thread_id = temp.threads.create()["thread_id"]
    cron = temp.crons.create_for_thread(thread_id, "refund", schedule="0 9 * * *", input={})
    server.services.keyring.revoke(key_info.key_id, actor={"id": "admin"}, reason="left")
    # When it is due, then it does not fire: it is disabled, by the scheduler, saying why
    assert fire_due(server, cron) == []
    events = list(server.store.events.get(cron_uuid(cron["cron_id"])))
    assert [type(e).__name__ for e in events] == ["CronScheduled", "CronUpdated"]
    assert events[1].changes == {"enabled": False}
    assert events[1].actor["id"] == "holdpoint-scheduler"
    assert "revoked" in events[1].actor["reason"]
    assert server.services.runs.store.of_thread(thread_id, limit=5) == []


def test_a_cron_whose_makers_key_has_expired_stops_on_record_and_runs_nothing(server, monkeypatch):
    # Given a cron made by a key valid for a day, and the clock past its expiry
    expiry = datetime.now(UTC) + timedelta(days=1)
    _info, raw = server.services.keyring.create("brief-agent", "agent", expires_at=expiry)
    temp = get_sync_client(url=server.url, api_key=raw)
    thread_id = temp.threads.create()["thread_id"]
    cron = temp.crons.create_for_thread(thread_id, "refund", schedule="0 9 * * *", input={})
    monkeypatch.setattr("domain.access.keyring.datetime", Later)
    # When it is due, then it does not fire: it is disabled on record, saying why
    assert fire_due(server, cron) == []
    events = list(server.store.events.get(cron_uuid(cron["cron_id"])))
    assert [type(e).__name__ for e in events] == ["CronScheduled", "CronUpdated"]
    assert "expired" in events[1].actor["reason"]
    assert server.services.runs.store.of_thread(thread_id, limit=5) == []


def fired_not_started(server):  # type: ignore[no-untyped-def]
    """A thread's cron whose firing its scheduler recorded, without starting the run yet
    (dead, or slow); the thread's id, the cron and the firing."""
    agent = server.sdk("agent")
    thread_id = agent.threads.create()["thread_id"]
    cron = agent.crons.create_for_thread(
        thread_id, "refund", schedule="0 9 * * *", input={"refund_amount": 7.0}
    )
    due = datetime.fromisoformat(cron["next_run_date"].replace("Z", "+00:00"))
    firing = Crons(server.store).fire(cron["cron_id"], due)
    assert server.services.runs.store.get(firing.run_id) is None
    server.services.read_models.catch_up_to_head()
    return thread_id, cron, firing


def test_a_firing_whose_run_never_started_is_taken_up_once_by_another_scheduler(server):
    # Given a cron whose scheduler recorded its firing and died before starting the run
    thread_id, cron, stranded = fired_not_started(server)
    # When another scheduler looks a minute later, twice
    later = datetime.now(UTC) + timedelta(seconds=61)
    taken = [
        f for f in server.services.scheduler.run_once(now=later) if f.run_id == stranded.run_id
    ]
    again = [
        f for f in server.services.scheduler.run_once(now=later) if f.run_id == stranded.run_id
    ]
    # Then that very run starts, once, and the taking up is on record
    assert len(taken) == 1
    assert again == []
    assert wait_for_run(server, thread_id, stranded.run_id).status == "success"
    names = [type(e).__name__ for e in server.store.events.get(cron_uuid(cron["cron_id"]))]
    assert names == ["CronScheduled", "CronFired", "CronRunRecovered"]


@pytest.fixture(params=["sqlite", "postgres"])
def each_store_server(request, tmp_path):
    if request.param == "sqlite":
        with running_server(f"sqlite:///{tmp_path / 'h.db'}", cron_poll_seconds=3600) as s:
            yield s
        return
    with postgres_schema_url() as url, running_server(url, cron_poll_seconds=3600) as s:
        yield s


def test_a_slow_scheduler_whose_firing_was_taken_up_meanwhile_starts_no_second_run(
    each_store_server,
):
    server = each_store_server
    # Given a cron whose scheduler recorded its firing and was slow to start the run, and
    # another scheduler that took the firing up a minute later and started that run
    thread_id, cron, slow = fired_not_started(server)
    later = datetime.now(UTC) + timedelta(seconds=61)
    taken = server.services.scheduler.recover_stranded(later)
    assert [f.run_id for f in taken if f.cron.cron_id == cron["cron_id"]] == [slow.run_id]

    # When the slow scheduler starts its firing's run at last
    server.services.scheduler.start_firing(slow)

    # Then the store kept one run, which ran once
    assert wait_for_run(server, thread_id, slow.run_id).status == "success"
    assert [r.run_id for r in server.services.runs.store.of_thread(thread_id, limit=10)] == [
        slow.run_id
    ]


def test_two_servers_on_one_postgresql_store_fire_a_due_cron_once():
    # Given two servers on one PostgreSQL store, each with its own scheduler
    with (
        postgres_schema_url() as url,
        running_server(url, cron_poll_seconds=3600) as one,
        running_server(url, cron_poll_seconds=3600) as two,
    ):
        agent = one.sdk("agent")
        thread_id = agent.threads.create()["thread_id"]
        cron = agent.crons.create_for_thread(
            thread_id, "refund", schedule="*/10 * * * *", input={"refund_amount": 4.0}
        )
        due = datetime.fromisoformat(cron["next_run_date"].replace("Z", "+00:00"))
        for server in (one, two):
            server.services.read_models.catch_up_to_head()
        # When both fire what is due at its due time at once
        with ThreadPoolExecutor(2) as pool:
            fired = list(pool.map(lambda s: s.services.scheduler.fire_due(due), (one, two)))
        # Then exactly one fired it, and its one run ran
        ours = [f for found in fired for f in found if f.cron.cron_id == cron["cron_id"]]
        assert len(ours) == 1
        assert wait_for_run(one, thread_id, ours[0].run_id).status == "success"
        assert len(one.services.runs.store.of_thread(thread_id, limit=10)) == 1
        names = [type(e).__name__ for e in one.store.events.get(cron_uuid(cron["cron_id"]))]
        assert names == ["CronScheduled", "CronFired"]
