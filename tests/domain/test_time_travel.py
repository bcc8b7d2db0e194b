"""Time travel, read-only: a thread at any version or moment, each version's event,
and the diff between two versions, on every store kind. Reading never runs a
node and never writes.

The story: an approval graph START -> ask -> pay -> END; `ask` pauses for a
human, who approves. Its eight versions are ThreadStarted, InputReceived,
NodeCompleted(__start__), InterruptRaised, InterruptResumed,
NodeCompleted(ask), NodeCompleted(pay), ThreadCompleted.
"""

from __future__ import annotations

import operator
from datetime import timedelta
from itertools import pairwise
from typing import Annotated, Any, TypedDict
from uuid import UUID

import pytest

from domain.errors import CheckpointNotFoundError, ThreadNotFoundError
from domain.graph import CompiledStateGraph
from domain.history.state_snapshots import get_state, get_state_history
from domain.history.time_travel import (
    KeyChange,
    NotYetStartedError,
    VersionNotFoundError,
    diff_values,
    diff_versions,
    event_at,
    fork_origin,
    head_version,
    resolve_version,
    state_at_time,
    state_at_version,
    version_at,
    versions,
)
from domain.record.application import Workflows
from domain.record.store import open_store
from domain.types import Command, interrupt
from tests.graphs import linear_graph

EVENTS = [
    "ThreadStarted",
    "InputReceived",
    "NodeCompleted",
    "InterruptRaised",
    "InterruptResumed",
    "NodeCompleted",
    "NodeCompleted",
    "ThreadCompleted",
]


class Approval(TypedDict):
    amount: float
    approved: Any
    log: Annotated[list, operator.add]


class Tripwire:
    """Counts node runs; once armed, a node that runs fails the test."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.armed = False

    def ran(self, node: str) -> None:
        assert not self.armed, f"node {node!r} ran while the thread was only read"
        self.calls.append(node)


def approval_graph(store: Workflows, wire: Tripwire) -> CompiledStateGraph:
    def ask(state: Approval) -> dict[str, Any]:
        wire.ran("ask")
        return {"approved": interrupt({"question": f"Pay {state['amount']}?"}), "log": ["ask"]}

    def pay(state: Approval) -> dict[str, Any]:
        wire.ran("pay")
        return {"log": [f"pay approved={state['approved']}"]}

    return linear_graph(store, Approval, ask, pay, name="approval")


def config(thread_id: str = "t1", **configurable: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id, **configurable}}


@pytest.fixture
def wire() -> Tripwire:
    return Tripwire()


@pytest.fixture
def approved(store: Workflows, wire: Tripwire) -> str:
    """Thread t1: asked about 250.0, approved, paid."""
    graph = approval_graph(store, wire)
    graph.invoke({"amount": 250.0, "approved": None}, config())
    graph.invoke(Command(resume=True), config())
    return "t1"


# -- the state at a version -------------------------------------------------


def test_the_state_at_each_version_is_the_thread_right_after_that_event(store, approved):
    # When
    states = [state_at_version(store, approved, v) for v in range(1, 9)]

    # Then
    assert [s.event.type for s in states] == EVENTS
    assert [s.status for s in states] == [
        "idle",
        "running",
        "running",
        "interrupted",
        "running",
        "running",
        "idle",
        "idle",
    ]
    assert [s.next for s in states] == [
        [],
        ["__start__"],
        ["ask"],
        ["ask"],
        ["ask"],
        ["pay"],
        [],
        [],
    ]
    assert states[3].values == {"amount": 250.0, "approved": None, "log": []}
    assert states[5].values == {"amount": 250.0, "approved": True, "log": ["ask"]}
    assert states[7].values == {
        "amount": 250.0,
        "approved": True,
        "log": ["ask", "pay approved=True"],
    }


def test_a_paused_version_shows_its_pending_interrupt(store, approved):
    # When
    paused = state_at_version(store, approved, 4)

    # Then
    [pending] = paused.interrupts
    assert pending["node"] == "ask"
    assert pending["value"] == {"question": "Pay 250.0?"}
    assert pending["id"] == paused.event.data["interrupt_id"]
    assert state_at_version(store, approved, 5).interrupts == []


def test_a_version_names_the_latest_checkpoint_at_or_before_it(store, approved):
    # Given the checkpoints LangGraph's history lists, by version
    history = {
        UUID(s.config["configurable"]["checkpoint_id"]).int >> 64: s
        for s in get_state_history(store, config())
    }

    # When
    at_question = state_at_version(store, approved, 4)
    at_checkpoint = state_at_version(store, approved, 3)

    # Then
    assert at_question.checkpoint_id == history[3].config["configurable"]["checkpoint_id"]
    assert at_question.event.checkpoint_id is None
    assert at_checkpoint.event.checkpoint_id == at_checkpoint.checkpoint_id
    assert get_state(store, config(checkpoint_id=at_checkpoint.checkpoint_id)).values == (
        at_checkpoint.values
    )


def test_without_a_version_the_state_is_the_latest(store, approved):
    # When
    latest = state_at_version(store, approved)

    # Then
    assert (latest.version, latest.head) == (8, 8)
    assert latest.values == get_state(store, config()).values


def test_each_versions_event_carries_its_fields_and_its_link_in_the_hash_chain(store, approved):
    # When
    found = versions(store, approved)

    # Then
    assert [e.type for e in found] == EVENTS
    assert [e.version for e in found] == list(range(1, 9))
    assert found[0].prev_hash == "0" * 64
    assert all(b.prev_hash == a.event_hash for a, b in pairwise(found))
    assert found[3].data["value"] == {"question": "Pay 250.0?"}
    assert found[4].data["resume"] is True
    assert "originator_id" not in found[3].data
    assert event_at(store, approved, 6).update == {"approved": True, "log": ["ask"]}


def test_the_versions_that_are_checkpoints_are_those_langgraphs_history_lists(store, approved):
    # When
    marked = {e.checkpoint_id for e in versions(store, approved) if e.checkpoint_id}

    # Then
    listed = {s.config["configurable"]["checkpoint_id"] for s in get_state_history(store, config())}
    assert marked == listed
    assert len(marked) == 4


@pytest.mark.parametrize("version", [0, -1, 9, 1000])
def test_a_version_outside_the_thread_is_refused_with_its_range(store, approved, version):
    # When / Then
    with pytest.raises(VersionNotFoundError, match="has versions 1 to 8; there is no version"):
        state_at_version(store, approved, version)


def test_an_unknown_thread_is_refused(store):
    # When / Then
    with pytest.raises(ThreadNotFoundError, match="'nope' does not exist"):
        state_at_version(store, "nope", 1)
    with pytest.raises(ThreadNotFoundError):
        versions(store, "nope")
    with pytest.raises(ThreadNotFoundError):
        head_version(store, "nope")


# -- the state at a moment ----------------------------------------------------


def test_the_state_at_an_events_moment_is_the_last_version_recorded_by_then(store, approved):
    # Given
    stamps = [e.timestamp for e in versions(store, approved)]

    # When
    found = [state_at_time(store, approved, moment).version for moment in stamps]

    # Then: the last version whose timestamp is not after the moment (ties go forward)
    assert found == [max(v for v, t in enumerate(stamps, 1) if t <= moment) for moment in stamps]


def test_a_moment_between_two_events_gives_the_earlier_one(store, approved):
    # Given
    stamps = [e.timestamp for e in versions(store, approved)]
    gaps = [v for v in range(1, 8) if stamps[v] - stamps[v - 1] > timedelta(microseconds=1)]

    # When / Then
    for version in gaps:
        moment = stamps[version - 1] + (stamps[version] - stamps[version - 1]) / 2
        assert version_at(store, approved, moment) == version


def test_a_moment_after_the_last_event_gives_the_latest_version(store, approved):
    # When
    later = state_at_time(
        store, approved, versions(store, approved)[-1].timestamp + timedelta(days=1)
    )

    # Then
    assert later.version == 8


def test_a_moment_without_an_offset_is_read_as_utc(store, approved):
    # Given
    stamp = versions(store, approved)[3].timestamp

    # When
    naive = version_at(store, approved, stamp.replace(tzinfo=None))

    # Then
    assert naive == version_at(store, approved, stamp)


def test_a_moment_before_the_thread_began_is_refused(store, approved):
    # Given
    first = versions(store, approved)[0].timestamp

    # When / Then
    with pytest.raises(NotYetStartedError, match="did not exist at"):
        state_at_time(store, approved, first - timedelta(seconds=1))


# -- differences ----------------------------------------------------------------


def test_the_diff_between_two_versions_names_each_changed_key_with_old_and_new(store, approved):
    # When
    diff = diff_versions(store, approved, 3, 7)

    # Then
    assert diff.changes == [
        KeyChange("approved", "changed", old=None, new=True),
        KeyChange("log", "changed", old=[], new=["ask", "pay approved=True"]),
    ]
    assert (diff.next_from, diff.next_to) == (["ask"], [])
    assert (diff.status_from, diff.status_to) == ("running", "idle")


def test_a_diff_backwards_swaps_old_and_new(store, approved):
    # When
    diff = diff_versions(store, approved, 6, 3)

    # Then
    assert diff.changes == [
        KeyChange("approved", "changed", old=True, new=None),
        KeyChange("log", "changed", old=["ask"], new=[]),
    ]


def test_a_diff_from_before_the_input_shows_added_keys(store, approved):
    # When
    diff = diff_versions(store, approved, 1, 3)

    # Then
    assert diff.changed_keys == ["amount", "approved"]
    assert diff.changes[0] == KeyChange("amount", "added", new=250.0)


def test_a_diff_of_a_version_with_itself_is_empty(store, approved):
    assert diff_versions(store, approved, 5, 5).changes == []


def test_versions_may_be_named_by_checkpoint_id(store, approved):
    # Given
    ids = {e.version: e.checkpoint_id for e in versions(store, approved) if e.checkpoint_id}

    # When
    diff = diff_versions(store, approved, ids[3], ids[7])

    # Then
    assert (diff.from_version, diff.to_version) == (3, 7)
    assert resolve_version(store, approved, "6") == 6


def test_a_checkpoint_id_of_another_thread_is_refused(store, wire, approved):
    # Given another thread of the same graph
    approval_graph(store, wire).invoke({"amount": 1.0, "approved": None}, config("t2"))
    other = next(e.checkpoint_id for e in versions(store, "t2") if e.checkpoint_id)

    # When / Then
    with pytest.raises(CheckpointNotFoundError):
        diff_versions(store, approved, other, 3)
    with pytest.raises(CheckpointNotFoundError):
        resolve_version(store, approved, "not-a-checkpoint")


def test_diff_values_tells_added_removed_and_changed_keys_and_type_changes():
    # When
    changes = diff_values(
        {"a": 1, "b": 2, "c": 1, "d": [1]}, {"a": 1, "c": True, "d": [1, 2], "e": 0}
    )

    # Then
    assert changes == [
        KeyChange("c", "changed", old=1, new=True),
        KeyChange("d", "changed", old=[1], new=[1, 2]),
        KeyChange("e", "added", new=0),
        KeyChange("b", "removed", old=2),
    ]


# -- reading runs nothing and writes nothing -----------------------------------


def test_reading_a_thread_in_every_way_runs_no_node_and_writes_nothing(store, wire, approved):
    # Given the nodes ran while the thread was recorded, and now fail if they run
    assert wire.calls == ["ask", "ask", "pay"]
    wire.armed = True
    head = store.recorder.max_notification_id()
    stamps = [e.timestamp for e in versions(store, approved)]

    # When every reading is done
    for version in range(1, 9):
        state_at_version(store, approved, version)
        diff_versions(store, approved, 1, version)
    for moment in stamps:
        state_at_time(store, approved, moment)
    for snapshot in get_state_history(store, config()):
        get_state(store, snapshot.config)
    fork_origin(store, approved)

    # Then no node ran and the store is as it was
    assert wire.calls == ["ask", "ask", "pay"]
    assert store.recorder.max_notification_id() == head


def test_a_thread_reads_the_same_with_no_graph_in_the_process(store_url_for):
    # Given a thread recorded through one store object (its graph then forgotten)
    if store_url_for.startswith("memory"):
        pytest.skip("a memory store lives and dies with its process")
    with open_store(store_url_for) as first:
        approval_graph(first, Tripwire()).invoke({"amount": 5.0, "approved": None}, config())
        recorded = [state_at_version(first, "t1", v) for v in range(1, 5)]

    # When it is read through a new store object, with no graph compiled
    with open_store(store_url_for) as second:
        read_back = [state_at_version(second, "t1", v) for v in range(1, 5)]

    # Then
    assert read_back == recorded
