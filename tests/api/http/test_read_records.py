"""Who saw what, over HTTP: given a refund paused at its interrupt, each listed read (the
queue with its payloads, a thread's audit timeline and events, the oversight report, the
decision register) leaves its record with who, what and when, once per reader, thing
read and window, across two server processes on one store; a caller without a key, or
with the wrong role, leaves its refusal and nothing else; `GET /audit/reads` lists the
reads, filtered, for auditors."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from domain.oversight.read_log import ReadLog
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


def kinds_since(server, position):
    """The names of the events recorded after `position`."""
    found = server.store.recorder.select_notifications(start=position + 1, limit=10_000)
    return [n.topic.rpartition(".")[2] for n in found]


def reads_on_record(server, **query):
    with server.http("auditor") as auditor:
        answer = auditor.get("/audit/reads", params=query)
    assert answer.status_code == 200, answer.text
    return [(r["actor_id"], r["kind"], r["target"], r["thread_id"]) for r in answer.json()["data"]]


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 3, 2, 9, 0, 5, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def test_every_listed_read_leaves_its_record_with_who_what_and_when(server):
    thread_id, interrupt_id = paused_refund(server)
    # When a reviewer reads the queue and an auditor the thread's timeline, its events,
    # the oversight report and the decision register
    with server.http("reviewer") as reviewer:
        assert reviewer.get("/approvals", params={"graph_id": "refund"}).status_code == 200
    with server.http("auditor") as auditor:
        for path in (f"/threads/{thread_id}/audit", f"/threads/{thread_id}/events"):
            assert auditor.get(path).status_code == 200
        assert auditor.get("/reports/oversight", params={"format": "csv"}).status_code == 200
        assert auditor.get("/reports/decisions").status_code == 200
    # Then each is on record (the timeline and the events as one read of the timeline)
    assert reads_on_record(server) == [
        ("reviewer", "queue", "approvals?graph_id=refund", None),
        ("reviewer", "payload", interrupt_id, thread_id),
        ("auditor", "timeline", thread_id, thread_id),
        ("auditor", "report", "oversight?format=csv", None),
        ("auditor", "report", "decisions?format=json", None),
    ]
    # And the auditors' filters find who read this thread, and what one reader read
    assert [r[:2] for r in reads_on_record(server, thread_id=thread_id)] == [
        ("reviewer", "payload"),
        ("auditor", "timeline"),
    ]
    assert [r[1] for r in reads_on_record(server, actor="reviewer")] == ["queue", "payload"]
    assert reads_on_record(server, kind="report", since="2999-01-01") == []
    with server.http("auditor") as auditor:
        answer = auditor.get("/reports/oversight").json()
    assert answer["reads"]["by_reader"] == {"auditor": 3, "reviewer": 2}
    assert answer["reads"]["threads_with_payloads_read"] == 1


def test_a_busy_queue_records_once_per_window_and_again_in_a_new_one(server):
    paused_refund(server)
    clock = Clock()
    server.services.reads.clock = clock
    with server.http("reviewer") as reviewer:
        reviewer.get("/approvals")
        head = server.head()
        # When the reviewer reloads the queue 30 times within the window
        for _ in range(30):
            clock.now += timedelta(seconds=5)
            assert reviewer.get("/approvals").status_code == 200
        # Then nothing more is recorded
        assert server.head() == head
        # And a read in the next window is recorded again, as one event
        clock.now += timedelta(seconds=300)
        reviewer.get("/approvals")
    assert kinds_since(server, head) == ["ReadsRecorded"]


def test_a_caller_without_a_key_or_with_the_wrong_role_leaves_only_its_refusal(server):
    thread_id, _ = paused_refund(server)
    head = server.head()
    paths = ["/approvals", f"/threads/{thread_id}/audit", "/reports/oversight", "/audit/reads"]
    with server.http() as anonymous, server.http("agent") as agent:
        for path in paths:
            assert anonymous.get(path).status_code == 401
            assert agent.get(path).status_code == 403
    assert kinds_since(server, head) == ["AccessRefused"] * 2 * len(paths)


def test_a_read_that_fails_records_nothing(server):
    head = server.head()
    with server.http("auditor") as auditor:
        assert auditor.get("/threads/no-such-thread/audit").status_code == 404
        bad = auditor.get("/reports/oversight", params={"since": "yesterday"})
        assert bad.status_code == 422
        assert auditor.get("/audit/reads", params={"cursor": "x"}).status_code == 422
    assert kinds_since(server, head) == []


def test_two_server_processes_reading_at_once_record_the_read_once(server, tmp_path):
    _, interrupt_id = paused_refund(server)
    with running_server(f"sqlite:///{tmp_path / 'holdpoint.db'}") as other:
        server.services.reads.clock = other.services.reads.clock = Clock()  # one window
        head = server.head()
        barrier = threading.Barrier(8)

        def read(url: str, key: str) -> None:
            with httpx.Client(base_url=url, headers={"x-api-key": key}, timeout=60) as client:
                barrier.wait()
                assert client.get("/approvals").status_code == 200

        # When the same reviewer reads the queue through both servers at once, 4 times each
        readers = [
            threading.Thread(target=read, args=(s.url, s.keys["reviewer"]))
            for s in (server, other) * 4
        ]
        for thread in readers:
            thread.start()
        for thread in readers:
            thread.join()
    # Then the queue and its payload are on record once
    assert kinds_since(server, head) == ["ReadsRecorded"]
    [notification] = server.store.recorder.select_notifications(start=head + 1, limit=1)
    [event] = server.store.events.get(notification.originator_id)
    assert isinstance(event, ReadLog.ReadsRecorded)
    assert [(r["kind"], r["target"]) for r in event.reads] == [
        ("queue", "approvals"),
        ("payload", interrupt_id),
    ]
