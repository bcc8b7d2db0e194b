"""A store written before the domain's modules moved reads, verifies and projects as it
did: `tests/fixtures/store_before_the_move.db` against what it read as then
(`tests/fixtures/recorded_store.py` says how both were made)."""

from __future__ import annotations

import json
import shutil

import pytest

from domain.record.chain import as_recorded, hashed_fields
from domain.record.hashing import event_hash
from domain.record.store import open_store
from domain.record.thread import WorkflowThread
from integrity.fast_hash import canonical_bytes
from tests.domain.test_event_topics import RECORDED_TOPICS, SNAPSHOT_TOPICS
from tests.fixtures.recorded_store import EXPECTED, STORE, reading


@pytest.fixture(scope="module")
def expected():
    return json.loads(EXPECTED.read_text())


@pytest.fixture(scope="module")
def now_read(tmp_path_factory, expected):
    """The fixture, copied (a store is written to when read models are rebuilt), as the
    code of today reads it."""
    copy = tmp_path_factory.mktemp("fixture") / STORE.name
    shutil.copyfile(STORE, copy)
    with open_store(f"sqlite:///{copy}") as store:
        return json.loads(json.dumps(reading(store, sorted(expected["threads"])), default=str))


# Kinds of event added after the fixture was written: not in it, by construction.
ADDED_SINCE = {
    "domain.thread:WorkflowThread.RunReclaimed",
    "domain.thread:WorkflowThread.RunCancelled",
    "domain.thread:WorkflowThread.MetadataUpdated",
    # real LangGraph graphs' (HoldpointSaver)
    "domain.thread:WorkflowThread.InterruptSuperseded",
    "domain.thread:WorkflowThread.CheckpointSaved",
    "domain.thread:WorkflowThread.WritesSaved",
} | {  # aggregates added since: memory items, crons, assistants, suspensions, read logs,
    # retention, erasures
    topic
    for topic in RECORDED_TOPICS
    if topic.startswith(
        (
            "domain.memory.",
            "domain.schedule.",
            "domain.assistants.",
            "domain.oversight.suspension",
            "domain.access.role_catalogue",
            "domain.oversight.policy_record",
            "domain.oversight.read_log",
            "domain.retention.",
            "domain.privacy.",
        )
    )
}


def test_its_events_are_of_topics_still_recorded(expected):
    assert set(expected["topics"]) <= RECORDED_TOPICS | SNAPSHOT_TOPICS
    assert set(expected["topics"]) == RECORDED_TOPICS - ADDED_SINCE  # one of every kind


def test_every_thread_reads_to_the_values_and_status_it_had(expected, now_read):
    assert now_read["threads"] == expected["threads"]
    assert expected["snapshots"]["long"] >= 1  # one thread is read through its snapshots


def test_the_log_verifies_as_it_did(expected, now_read):
    assert now_read["verify"] == expected["verify"] == {"events": expected["events"], "problems": 0}


# Columns added to a read model after the fixture was written: what an old store's rows
# hold in them (the queue's subgraph namespace, title and bulk; the oversight log's
# reviewed actions).
ADDED_COLUMNS = {"holdpoint_pending_approvals": ["", None, 0], "holdpoint_interrupt_log": [None]}


@pytest.mark.parametrize(
    "table",
    [
        "holdpoint_pending_approvals",
        "holdpoint_pending_counts",
        "holdpoint_threads",
        "holdpoint_interrupt_log",
        "holdpoint_cancellations",
        "holdpoint_flow_edits",
        "holdpoint_oversight_refusals",
    ],
)
def test_each_read_model_rebuilds_to_the_rows_it_had(expected, now_read, table):
    added = ADDED_COLUMNS.get(table, [])
    rows = now_read["read_models"][table]
    cut = len(rows[0]) - len(added) if rows else 0
    assert [row[:cut] for row in rows] == expected["read_models"][table]
    assert all(row[cut:] == added for row in rows)


def test_each_recorded_hash_is_what_recording_it_today_gives(tmp_path):
    # Given the fixture's thread events, on a store (which installs orjson's encoder)
    copy = tmp_path / STORE.name
    shutil.copyfile(STORE, copy)
    with open_store(f"sqlite:///{copy}") as store:
        rows = store.recorder.select_notifications(start=1, limit=100_000)
        events = [store.mapper.to_domain_event(row) for row in rows]
    threads: dict[object, str] = {}
    checked = fast = 0
    for event in events:
        if not isinstance(event, WorkflowThread.Event):
            continue
        record = as_recorded(event)
        thread_id = threads.setdefault(event.originator_id, record.state.get("thread_id"))
        # When its hash is computed as it is when an event is recorded
        again = event_hash(
            record.name,
            thread_id,
            record.version,
            record.state["timestamp"],
            record.state["prev_hash"],
            hashed_fields(record),
            recording=True,
        )
        # Then it is the hash recorded then, byte for byte
        assert again == record.state["event_hash"], (thread_id, record.version, record.name)
        checked += 1
        fast += canonical_bytes(hashed_fields(record)) is not None
    assert checked > 150  # every thread event of the fixture: 186
    assert fast > checked * 0.9  # nearly all of them by orjson
