"""Time travel on a thread long enough to have snapshots, on every store kind.

The story: a counter loop START -> inc -> inc -> ... -> END of 130 steps, one
event per step: 134 events, snapshots at versions 50 and 100. Reading the
thread at a version must give what folding all its events up to there gives,
while reading only the events after the nearest snapshot; listing its
history must agree, checkpoint by checkpoint, with reading each checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress
from itertools import pairwise
from typing import Any, TypedDict
from uuid import UUID

import pytest

from domain.errors import CheckpointNotFoundError, ThreadNotFoundError
from domain.graph import END, START, StateGraph
from domain.history.state_snapshots import checkpoint_id, get_state, get_state_history
from domain.history.time_travel import VersionNotFoundError, state_at_version
from domain.record.application import SNAPSHOT_INTERVAL, Workflows, fold_events
from domain.record.thread_uuids import thread_uuid

STEPS = 130
# ThreadStarted, InputReceived, NodeCompleted(__start__), one per step, ThreadCompleted
HEAD = STEPS + 4


class Counter(TypedDict):
    n: int


def run_loop(store: Workflows, thread_id: str = "loop") -> None:
    def inc(state: Counter) -> dict[str, Any]:
        return {"n": state["n"] + 1}

    def route(state: Counter) -> str:
        return "inc" if state["n"] < STEPS else END

    builder = StateGraph(Counter)
    builder.add_node("inc", inc)
    builder.add_edge(START, "inc")
    builder.add_conditional_edges("inc", route, ["inc", END])
    config = {"configurable": {"thread_id": thread_id}, "recursion_limit": STEPS + 10}
    builder.compile(checkpointer=store).invoke({"n": 0}, config)


@pytest.fixture
def looped(store: Workflows) -> str:
    run_loop(store)
    return "loop"


def folded_from_start(store: Workflows, thread_id: str, version: int) -> Any:
    """The thread at `version` the slow way: every event from the first, no snapshot."""
    return fold_events(None, store.thread_events(thread_id, lte=version))


class Reads:
    """Counts the queries a read makes and the rows they return, snapshots and events apart
    (a thread's head, when a query answers it alongside, is not an event row)."""

    def __init__(self) -> None:
        self.queries = 0
        self.events: list[int] = []
        self.snapshots: list[int] = []

    def spy(self, select: Callable[..., Any], into: list[int]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            rows = select(*args, **kwargs)
            self.queries += 1
            into.append(len(rows))
            return rows

        return counted

    def spy_at_version(self, select: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            snapshot, events, head = select(*args, **kwargs)
            self.queries += 1
            if args[0] is not None:  # the snapshots recorder: a snapshot was looked for
                self.snapshots.append(int(snapshot is not None))
            self.events.append(len(events))
            return snapshot, events, head

        return counted


@pytest.fixture
def reads(store: Workflows, monkeypatch: pytest.MonkeyPatch) -> Reads:
    counter = Reads()
    recorder = store.recorder
    spied = counter.spy(recorder.select_events, counter.events)
    monkeypatch.setattr(recorder, "select_events", spied)
    if hasattr(recorder, "select_at_version"):
        at_version = counter.spy_at_version(recorder.select_at_version)
        monkeypatch.setattr(recorder, "select_at_version", at_version)
        monkeypatch.setattr(store, "_reads_at_version", recorder)
    assert store.snapshots is not None
    snapshots = store.snapshots.recorder
    monkeypatch.setattr(
        snapshots, "select_events", counter.spy(snapshots.select_events, counter.snapshots)
    )
    return counter


# -- the state at a version --------------------------------------------------


def test_the_thread_has_snapshots_to_start_from(store, looped):
    # When
    taken = [s.originator_version for s in store.snapshots.get(thread_uuid(looped))]

    # Then
    assert taken == [SNAPSHOT_INTERVAL, 2 * SNAPSHOT_INTERVAL]


def test_the_thread_at_every_version_is_the_fold_of_all_its_events_until_then(store, looped):
    for version in range(1, HEAD + 1):
        # When
        found = store.thread_at(looped, version)

        # Then
        assert found is not None
        assert found.event.originator_version == version
        assert vars(found.thread) == vars(folded_from_start(store, looped, version))


def test_the_state_at_a_version_starts_from_the_nearest_snapshot_and_reads_only_later_events(
    store, store_kind, looped, reads
):
    # When: version 130 is 30 events past the snapshot at 100
    state = state_at_version(store, looped, 2 * SNAPSHOT_INTERVAL + 30)

    # Then the snapshot, the events from the snapshot's own on, and the head: one query
    # on the SQL stores; in memory a query each (the head's row is its last event)
    assert state.values == {"n": 2 * SNAPSHOT_INTERVAL + 27}
    assert state.head == HEAD
    assert reads.snapshots == [1]
    if store_kind == "memory":
        assert reads.events == [31, 1]
    else:
        assert (reads.queries, reads.events) == (1, [31])


def test_a_version_before_the_first_snapshot_is_read_without_looking_for_a_snapshot(
    store, store_kind, looped, reads
):
    # When
    state = state_at_version(store, looped, 20)

    # Then
    assert state.values == {"n": 17}
    assert state.head == HEAD
    assert reads.snapshots == []
    if store_kind == "memory":
        assert reads.events == [20, 1]
    else:
        assert (reads.queries, reads.events) == (1, [20])


def test_a_checkpoint_is_read_in_one_query_on_the_sql_stores(store, store_kind, looped, reads):
    # Given the checkpoint of step 107, at version 110: 10 events past the snapshot at 100
    config = {"configurable": {"thread_id": looped}}
    step = 2 * SNAPSHOT_INTERVAL + 7
    wanted = next(s.config for s in get_state_history(store, config) if s.metadata["step"] == step)
    reads.queries = 0
    reads.events.clear()
    reads.snapshots.clear()

    # When
    snapshot = get_state(store, wanted)

    # Then the snapshot and the events from it to 8 past the checkpoint, no head
    assert snapshot.values == {"n": step}
    assert reads.snapshots == [1]
    assert reads.events == [11 + 8]
    assert reads.queries == (2 if store_kind == "memory" else 1)


@pytest.mark.parametrize("version", [SNAPSHOT_INTERVAL - 1, 2 * SNAPSHOT_INTERVAL + 7])
def test_the_latest_version_is_read_only_when_asked_for(store, looped, version):
    # When
    without, with_head = store.read_at(looped, version), store.read_at(looped, version, head=True)

    # Then both find the same thread; only the second knows the latest version
    assert without.found is not None
    assert with_head.found is not None
    assert vars(without.found.thread) == vars(with_head.found.thread)
    assert (without.head, with_head.head) == (None, HEAD)


def test_a_thread_never_recorded_has_no_latest_version(store):
    # When
    read = store.read_at("never-started", 2 * SNAPSHOT_INTERVAL, head=True)

    # Then
    assert (read.found, read.head) == (None, 0)


@pytest.mark.parametrize("version", [0, -1, HEAD + 1, 2**62 + 1, 2**70])
def test_a_version_outside_the_thread_is_not_found_with_its_range(store, looped, version):
    # When / Then
    with pytest.raises(VersionNotFoundError) as raised:
        state_at_version(store, looped, version)
    assert raised.value.head == HEAD


def test_a_thread_never_recorded_is_not_found(store):
    # When / Then
    with pytest.raises(ThreadNotFoundError):
        state_at_version(store, "never-started", 1)


def test_a_version_that_is_a_snapshot_comes_with_its_own_event(store, looped):
    # When
    state = state_at_version(store, looped, SNAPSHOT_INTERVAL)

    # Then
    assert state.version == SNAPSHOT_INTERVAL
    assert state.event.version == SNAPSHOT_INTERVAL
    assert state.event.type == "NodeCompleted"
    assert state.event.checkpoint_id == state.checkpoint_id
    assert state.values == {"n": SNAPSHOT_INTERVAL - 3}


def test_a_version_past_the_head_is_not_found(store, looped):
    # When / Then
    assert store.thread_at(looped, HEAD + 1) is None
    assert store.thread_at("never-started", 1) is None


# -- checkpoints and history ---------------------------------------------------


def test_the_history_agrees_with_reading_each_checkpoint(store, looped):
    # When
    history = list(get_state_history(store, {"configurable": {"thread_id": looped}}))

    # Then: one checkpoint per step, the input's and __start__'s, newest first
    assert len(history) == STEPS + 2
    assert [s.metadata["step"] for s in history] == list(range(STEPS, -2, -1))
    assert [s.values.get("n") for s in history[:-1]] == list(range(STEPS, -1, -1))
    for snapshot in history:
        assert get_state(store, snapshot.config) == snapshot
    for newer, older in pairwise(history):
        assert newer.parent_config == older.config


def test_a_checkpoint_reads_the_same_through_a_new_store_object(store_url_for):
    # Given
    if store_url_for.startswith("memory"):
        pytest.skip("a memory store lives and dies with its process")
    from domain.record.store import open_store  # noqa: PLC0415

    with open_store(store_url_for) as first:
        run_loop(first)
        history = list(get_state_history(first, {"configurable": {"thread_id": "loop"}}))

    # When
    with open_store(store_url_for) as second:
        read_back = [get_state(second, snapshot.config) for snapshot in history]

    # Then
    assert read_back == history


@pytest.mark.parametrize("version", [0, STEPS + 5, 2**62 + 1, 2**64 - 1])
def test_a_checkpoint_id_naming_no_recorded_version_is_not_found(store, looped, version):
    # Given
    wanted = str(UUID(int=(version << 64) | 0x1234))
    assert checkpoint_id(version, "0" * 12 + "1234") == wanted

    # When / Then
    with pytest.raises(CheckpointNotFoundError):
        get_state(store, {"configurable": {"thread_id": looped, "checkpoint_id": wanted}})


def test_a_checkpoint_followed_by_a_long_gap_reads_up_to_the_next_checkpoint(store):
    # Given a node that fails 70 times before it completes: 70 NodeFailed events
    # between two checkpoints, more than one page of the read that follows one
    tries: list[int] = []

    def flaky(state: Counter) -> dict[str, Any]:
        tries.append(1)
        if len(tries) <= 70:
            raise ValueError(f"try {len(tries)}")
        return {"n": state["n"] + 1}

    builder = StateGraph(Counter)
    builder.add_node("flaky", flaky)
    builder.add_edge(START, "flaky")
    builder.add_edge("flaky", END)
    graph = builder.compile(checkpointer=store)
    config = {"configurable": {"thread_id": "gap"}}
    for attempt in range(71):
        with suppress(ValueError):
            graph.invoke({"n": 0} if attempt == 0 else None, config)

    # When
    history = list(get_state_history(store, config))

    # Then each checkpoint reads as the history shows it (a task's error is
    # compared by its text: exceptions compare by identity)
    assert [s.values for s in history] == [{"n": 1}, {"n": 0}, {}]
    for snapshot in history:
        assert repr(get_state(store, snapshot.config)) == repr(snapshot)
    assert history[1].tasks[0].result == {"n": 1}
