"""Event evolution: threads recorded by event schema v1 still read, run and verify.

`tests/fixtures/v1_events.json` holds events of every kind as the code at
commit d6af79d recorded them. Since then InterruptRaised gained
`required_role` (a new field with a default) and InterruptResumed renamed
`value` to `resume` (class_version 2, with an upcaster).
"""

from __future__ import annotations

import json
import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict
from uuid import UUID

import pytest
from eventsourcing.persistence import StoredEvent

from domain.history import state_snapshots as snapshots
from domain.record.application import Workflows
from domain.record.chain import verify_chain
from domain.record.thread import WorkflowThread
from domain.types import Command, interrupt
from tests.graphs import linear_graph

FIXTURE = json.loads((Path(__file__).parent.parent / "fixtures" / "v1_events.json").read_text())
THREADS = sorted(FIXTURE["expected_values"])
ADDED_AFTER_V1 = {
    "InterruptExpired",
    "InterruptAssigned",
    "InterruptApproved",
    "RunReclaimed",
    "RunCancelled",
    "MetadataUpdated",
    # real LangGraph graphs' (HoldpointSaver)
    "InterruptSuperseded",
    "CheckpointSaved",
    "WritesSaved",
}


class Refund(TypedDict):
    refund_amount: float
    outcome: str
    log: Annotated[list, operator.add]


def check(state: Refund) -> dict[str, Any]:
    if state["refund_amount"] > 100 and not interrupt({"question": "Approve?"}):
        return {"outcome": "denied", "log": ["check"]}
    return {"outcome": "processed", "log": ["check"]}


def book(state: Refund) -> dict[str, Any]:
    return {"log": ["booked"]}


def load_v1_events(store: Workflows) -> None:
    store.recorder.insert_events(
        [
            StoredEvent(
                originator_id=UUID(record["originator_id"]),
                originator_version=record["originator_version"],
                topic=record["topic"],
                state=record["state"].encode(),
            )
            for record in FIXTURE["events"]
        ]
    )


@pytest.fixture
def v1_store(store: Workflows) -> Workflows:
    load_v1_events(store)
    return store


def test_the_fixture_holds_every_kind_of_event():
    names = {record["topic"].rpartition(".")[2] for record in FIXTURE["events"]}
    kinds = {
        name
        for name, value in vars(WorkflowThread).items()
        if isinstance(value, type)
        and issubclass(value, WorkflowThread.Event | WorkflowThread.Created)
    } - {"Event", "Created"}
    assert names == kinds - ADDED_AFTER_V1


@pytest.mark.parametrize("thread_id", THREADS)
def test_old_threads_fold_to_the_state_they_had(v1_store, thread_id):
    assert v1_store.thread(thread_id).current_values() == FIXTURE["expected_values"][thread_id]


def test_an_old_answer_reads_under_its_new_name(v1_store):
    resumed = [
        e
        for e in v1_store.thread_events("approved")
        if isinstance(e, WorkflowThread.InterruptResumed)
    ]
    assert [(e.resume, e.decision, e.actor["id"]) for e in resumed] == [(True, "approve", "rita")]
    raised = [
        e
        for e in v1_store.thread_events("approved")
        if isinstance(e, WorkflowThread.InterruptRaised)
    ]
    assert [e.required_role for e in raised] == [None]


@pytest.mark.parametrize("thread_id", THREADS)
def test_old_threads_verify_as_stored(v1_store, thread_id):
    report = v1_store.verify_chain(thread_id)
    assert report.ok, report
    assert report.events_checked == len(v1_store.thread_events(thread_id))


def test_an_upcast_event_no_longer_matches_its_hash_so_verification_reads_records(v1_store):
    # The hash covers the fields as recorded: the upcast object has other names.
    assert verify_chain(v1_store.thread_events("approved")).ok is False
    assert v1_store.verify_chain("approved").ok is True


@pytest.mark.parametrize("thread_id", THREADS)
def test_old_threads_list_their_history(v1_store, thread_id):
    config = {"configurable": {"thread_id": thread_id}}
    history = list(snapshots.get_state_history(v1_store, config))
    assert history
    assert history[0].values == FIXTURE["expected_values"][thread_id]


def test_a_thread_paused_under_v1_resumes_under_v2_and_its_chain_still_verifies(v1_store):
    # Given the thread "edited", paused at a v1 InterruptRaised
    graph = linear_graph(v1_store, Refund, check, book, name="refund")
    config = {"configurable": {"thread_id": "edited", "actor": {"id": "rob", "role": "reviewer"}}}
    assert v1_store.thread("edited").status == "interrupted"
    # When a reviewer (not rita, who started it) answers it with today's code
    result = graph.invoke(Command(resume=True), config)
    # Then it runs to the end, and old and new events chain together
    assert result["log"] == ["check", "booked"]
    assert v1_store.thread("edited").status == "idle"
    assert v1_store.verify_chain("edited").ok
