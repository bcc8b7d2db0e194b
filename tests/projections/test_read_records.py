"""The read records read model: one row per read on record, with who, what, which thread
and when; filtered by thread, reader, kind and period; paged; the same rows after a
rebuild; and the oversight report's `reads` figure counts them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from domain.oversight.read_log import Read
from domain.oversight.read_logs import ReadLogs
from projections.catalog import runner_for
from projections.oversight_report import oversight_report
from projections.read_records import ReadRecords
from projections.timestamps import utc_text
from tests.projections.histories import read_models

RITA = {"id": "rita", "role": "reviewer", "authenticated": True, "via": "api_key"}
AUDREY = {"id": "audrey", "role": "auditor", "authenticated": True, "via": "api_key"}
QUEUE = Read("queue", "approvals", "http")
P1 = Read("payload", "i1", "http", thread_id="t1", interrupt_id="i1", graph_id="refund")
P2 = Read("payload", "i2", "ui", thread_id="t2", interrupt_id="i2", graph_id="payout")


@pytest.fixture
def runner(store):
    # Given a reviewer who read the queue with one payload three times, then with a second
    # one, and an auditor who read t1's timeline and the report
    logs = ReadLogs(store)
    for _ in range(3):
        logs.record(RITA, [QUEUE, P1])
    logs.record(RITA, [QUEUE, P1, P2])
    logs.record(AUDREY, [Read("timeline", "t1", "ui", thread_id="t1", graph_id="refund")])
    logs.record(AUDREY, [Read("report", "oversight", "http")])
    runner = runner_for(store)
    runner.catch_up()
    yield runner
    runner.close()


def test_each_read_is_one_row_with_who_what_and_when(runner):
    rows = ReadRecords(runner.db).reads()
    assert [(r.actor_id, r.kind, r.target, r.thread_id, r.via) for r in rows] == [
        ("rita", "queue", "approvals", None, "http"),
        ("rita", "payload", "i1", "t1", "http"),
        ("rita", "payload", "i2", "t2", "ui"),
        ("audrey", "timeline", "t1", "t1", "ui"),
        ("audrey", "report", "oversight", None, "http"),
    ]
    assert {r.actor_role for r in rows} == {"reviewer", "auditor"}
    assert all(r.at.endswith("Z") and r.window_start.endswith("+00:00") for r in rows)


def test_reads_are_filtered_by_thread_reader_kind_and_period(runner):
    records = ReadRecords(runner.db)
    assert [(r.actor_id, r.kind) for r in records.reads(thread_id="t1")] == [
        ("rita", "payload"),
        ("audrey", "timeline"),
    ]
    assert [r.kind for r in records.reads(actor_id="audrey")] == ["timeline", "report"]
    assert [r.target for r in records.reads(kind="payload")] == ["i1", "i2"]
    later = utc_text(datetime.now(UTC) + timedelta(minutes=1))
    assert records.reads(since=later) == []
    assert len(records.reads(until=later)) == 5
    assert [(r.actor_id, r.kind) for r in records.latest("t1", 1)] == [("audrey", "timeline")]


def test_reads_page_on_from_a_cursor_without_losing_or_repeating_one(runner):
    records = ReadRecords(runner.db)
    pages, after = [], None
    while True:
        page = records.reads(after=after, limit=2)
        pages.append([r.target for r in page])
        if len(page) < 2:
            break
        after = (page[-1].position, page[-1].seq)
    assert pages == [["approvals", "i1"], ["i2", "t1"], ["oversight"]]


def test_a_rebuild_gives_the_same_rows(runner):
    before = read_models(runner.db, ("read_records",))
    runner.rebuild()
    assert read_models(runner.db, ("read_records",)) == before


def test_the_oversight_report_counts_the_reads_by_kind_and_reader(runner):
    now = datetime.now(UTC)
    since, until = now - timedelta(days=1), now + timedelta(minutes=1)
    reads = oversight_report(runner.db, since=since, until=until, now=now)["reads"]
    assert {k: v for k, v in reads.items() if k != "how"} == {
        "value": 5,
        "by_kind": {"queue": 1, "payload": 2, "timeline": 1, "report": 1, "export": 0},
        "by_reader": {"audrey": 2, "rita": 3},
        "threads_with_payloads_read": 2,
    }
    one_graph = oversight_report(runner.db, since=since, until=until, graph_id="refund", now=now)
    assert one_graph["reads"]["by_kind"] == {
        "queue": 0,
        "payload": 1,
        "timeline": 1,
        "report": 0,
        "export": 0,
    }
