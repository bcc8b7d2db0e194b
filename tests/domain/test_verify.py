"""The hash chain: a recorded thread verifies; tampering is named by version."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from domain.record.application import Workflows
from domain.record.chain import recompute_hash, verify_chain
from domain.record.store import open_store
from domain.record.thread import WorkflowThread
from domain.types import Command
from tests.graphs import refund_graph


def record_refund_cycle(store: Workflows, thread_id: str = "v1") -> list[Any]:
    graph = refund_graph(store)
    cfg = {"configurable": {"thread_id": thread_id}}
    graph.invoke({"refund_amount": 250.0, "approved": False}, cfg)
    graph.invoke(Command(resume=True), cfg)
    graph.update_state(cfg, {"refund_amount": 200.0})
    return store.thread_events(thread_id)


def test_a_recorded_thread_verifies(store):
    # Given
    events = record_refund_cycle(store)

    # When
    report = verify_chain(events)

    # Then
    assert report.ok is True
    assert report.thread_id == "v1"
    assert report.events_checked == len(events) == 9
    assert report.broken_at is None
    assert report.problem is None


def test_a_thread_read_back_through_a_new_store_object_verifies(sqlite_url):
    # Given
    with open_store(sqlite_url) as store:
        record_refund_cycle(store)

    # When
    with open_store(sqlite_url) as reopened:
        report = verify_chain(reopened.thread_events("v1"))

    # Then
    assert report.ok is True
    assert report.events_checked == 9


@pytest.mark.parametrize(
    ("version", "change"),
    [
        (5, {"resume": False}),  # the human's answer, InterruptResumed
        (5, {"actor": {"id": "mallory", "role": "admin"}}),
        (2, {"input": {"refund_amount": 1.0, "approved": False}}),  # InputReceived
        (1, {"graph_digest": "0" * 64}),  # ThreadStarted
        (9, {"reason": "forged"}),  # StateEdited, the last event
    ],
    ids=["resume-value", "resume-actor", "input", "graph-digest", "last-event"],
)
def test_altering_a_field_of_one_event_is_reported_at_its_version(store, version, change):
    # Given
    events = record_refund_cycle(store)
    tampered = list(events)
    tampered[version - 1] = dataclasses.replace(events[version - 1], **change)

    # When
    report = verify_chain(tampered)

    # Then
    assert report.ok is False
    assert report.broken_at == version
    assert "altered" in (report.problem or "")


def test_altering_a_field_in_place_is_reported_at_its_version(store):
    # Given
    events = record_refund_cycle(store)
    forged = dataclasses.replace(events[3])
    object.__setattr__(forged, "value", {"question": "approve everything?"})
    tampered = [*events[:3], forged, *events[4:]]

    # When
    report = verify_chain(tampered)

    # Then
    assert isinstance(events[3], WorkflowThread.InterruptRaised)
    assert report.ok is False
    assert report.broken_at == 4


def test_rehashing_an_altered_event_still_breaks_the_link_to_the_next(store):
    # Given: the forger recomputes the altered event's own hash
    events = record_refund_cycle(store)
    forged = dataclasses.replace(events[4], resume=False)
    forged = dataclasses.replace(forged, event_hash=recompute_hash(forged, "v1"))
    tampered = [*events[:4], forged, *events[5:]]

    # When
    report = verify_chain(tampered)

    # Then
    assert report.ok is False
    assert report.broken_at == 6
    assert "prev_hash" in (report.problem or "")


def test_removing_one_event_is_reported_where_the_chain_breaks(store):
    # Given
    events = record_refund_cycle(store)
    tampered = [*events[:4], *events[5:]]  # version 5 removed

    # When
    report = verify_chain(tampered)

    # Then: position 5 now holds version 6
    assert report.ok is False
    assert report.broken_at == 6
    assert "expected version 5" in (report.problem or "")


def test_removing_the_first_event_is_reported(store):
    # Given
    events = record_refund_cycle(store)

    # When
    report = verify_chain(events[1:])

    # Then
    assert report.ok is False
    assert report.broken_at == 2


def test_swapping_two_events_is_reported_at_the_first_out_of_place(store):
    # Given
    events = record_refund_cycle(store)
    tampered = list(events)
    tampered[5], tampered[6] = tampered[6], tampered[5]

    # When
    report = verify_chain(tampered)

    # Then: position 6 holds version 7
    assert report.ok is False
    assert report.broken_at == 7
    assert "expected version 6" in (report.problem or "")


def test_swapping_the_contents_of_two_versions_is_reported_at_the_first(store):
    # Given: the stored rows keep their versions but trade their contents
    events = record_refund_cycle(store)
    sixth, seventh = events[5], events[6]
    tampered = list(events)
    tampered[5] = dataclasses.replace(seventh, originator_version=6)
    tampered[6] = dataclasses.replace(sixth, originator_version=7)

    # When
    report = verify_chain(tampered)

    # Then
    assert report.ok is False
    assert report.broken_at == 6


def test_an_event_from_another_thread_does_not_verify_in_this_one(store):
    # Given
    ours = record_refund_cycle(store, "ours")
    theirs = record_refund_cycle(store, "theirs")
    tampered = [*ours[:4], theirs[4], *ours[5:]]

    # When
    report = verify_chain(tampered, thread_id="ours")

    # Then
    assert report.ok is False
    assert report.broken_at == 5


def test_an_empty_chain_verifies_with_nothing_checked():
    # When
    report = verify_chain([], thread_id="empty")

    # Then
    assert report.ok is True
    assert report.events_checked == 0
