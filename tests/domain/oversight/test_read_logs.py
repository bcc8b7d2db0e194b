"""Who saw what, as recorded facts: a read is recorded once per reader, thing read and
window, in the store; a new window records it again; what another process recorded
counts; two writers at once list a read once."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from domain.oversight.read_log import Read, read_log_uuid, window_start
from domain.oversight.read_logs import ReadLogs
from domain.record.store import open_store

RITA = {"id": "rita", "role": "reviewer", "authenticated": True, "via": "api_key"}
START = datetime(2026, 3, 2, 9, 0, 10, tzinfo=UTC)
QUEUE = Read("queue", "approvals", "http")
PAYLOAD = Read("payload", "i1", "http", thread_id="t1", interrupt_id="i1", graph_id="refund")


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def logs(store, clock):
    return ReadLogs(store, window_seconds=300, clock=clock)


def recorded(store, actor=RITA, at=START):
    """The events of the reader's log for the window `at` falls in: (kind, reads)."""
    log_id = read_log_uuid(actor, window_start(at, 300))
    return [(type(e).__name__, e.reads) for e in store.events.get(log_id)]


def test_a_read_is_recorded_with_who_what_and_when(store, logs):
    # given a reviewer who lists the queue, which shows one interrupt's payload
    # when the read is recorded
    assert logs.record(RITA, [QUEUE, PAYLOAD]) == 2
    # then the reader's log for the window says who, what and which thread and interrupt
    [event] = store.events.get(read_log_uuid(RITA, window_start(START, 300)))
    assert type(event).__name__ == "ReadsRecorded"
    assert event.actor == RITA
    assert event.window_start == "2026-03-02T09:00:00+00:00"
    assert event.reads == [QUEUE.json(), PAYLOAD.json()]
    assert PAYLOAD.json() == {
        "kind": "payload",
        "target": "i1",
        "via": "http",
        "thread_id": "t1",
        "interrupt_id": "i1",
        "graph_id": "refund",
    }


def test_the_same_reads_in_one_window_record_once_whatever_the_channel(store, logs, clock):
    # given a reviewer whose queue read is on record
    logs.record(RITA, [QUEUE, PAYLOAD])
    # when they read it 50 times more in the window, through the API and the browser
    for second in range(50):
        clock.now = START + timedelta(seconds=second * 5)
        via = "ui" if second % 2 else "http"
        assert logs.record(RITA, [Read("queue", "approvals", via), PAYLOAD]) == 0
    # then the log still has the one event
    assert [kind for kind, _ in recorded(store)] == ["ReadsRecorded"]


def test_a_view_that_shows_something_new_records_only_the_new(store, logs):
    logs.record(RITA, [QUEUE, PAYLOAD])
    second = Read("payload", "i2", "http", thread_id="t2", interrupt_id="i2", graph_id="refund")
    assert logs.record(RITA, [QUEUE, PAYLOAD, second]) == 1
    assert recorded(store) == [
        ("ReadsRecorded", [QUEUE.json(), PAYLOAD.json()]),
        ("MoreReadsRecorded", [second.json()]),
    ]


def test_a_read_in_a_new_window_is_recorded_again(store, logs, clock):
    logs.record(RITA, [PAYLOAD])
    clock.now = START + timedelta(seconds=300)
    assert logs.record(RITA, [PAYLOAD]) == 1
    assert len(recorded(store, at=START)) == len(recorded(store, at=clock.now)) == 1


def test_another_reader_is_recorded_apart(store, logs):
    ada = {"id": "ada", "role": "auditor", "authenticated": True, "via": "api_key"}
    logs.record(RITA, [PAYLOAD])
    assert logs.record(ada, [PAYLOAD]) == 1
    assert len(recorded(store, ada)) == 1


def test_nothing_read_records_nothing(store, logs):
    assert logs.record(RITA, []) == 0
    assert recorded(store) == []


def test_what_another_process_recorded_counts_and_concurrent_writers_list_a_read_once(
    sqlite_url, clock
):
    # given two processes' stores on one SQLite file
    with open_store(sqlite_url) as one, open_store(sqlite_url) as other:
        logs = [ReadLogs(one, clock=clock), ReadLogs(other, clock=clock)]
        reads = [
            Read("payload", f"i{n}", "http", thread_id="t", interrupt_id=f"i{n}") for n in range(20)
        ]
        barrier = threading.Barrier(2)
        counts: list[int] = []

        def read_all(log: ReadLogs) -> None:
            barrier.wait()
            counts.extend(log.record(RITA, [read]) for read in reads)

        # when both record the same twenty reads at once
        threads = [threading.Thread(target=read_all, args=(log,)) for log in logs]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        # then each read is listed once in the log, and each was new to one of them
        listed = [r["interrupt_id"] for _, batch in recorded(one) for r in batch]
        assert sorted(listed) == sorted(r.interrupt_id for r in reads)
        assert sum(counts) == 20


def test_a_read_is_of_a_known_kind_and_channel():
    with pytest.raises(ValueError, match="one of"):
        Read("glance", "x", "http")
    with pytest.raises(ValueError, match="one of"):
        Read("queue", "x", "fax")
    with pytest.raises(ValueError, match="at least 1 second"):
        ReadLogs(None, window_seconds=0)  # type: ignore[arg-type]
