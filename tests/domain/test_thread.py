"""The thread aggregate, given its events: when one more is recorded, then what it folds to.

These tests drive `WorkflowThread` directly, without a graph or a store: each
one builds the given history with `start`/`record`, clears it with
`collect_events()`, records one new event, and checks the new events and the
folded fields.
"""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Any

import pytest

from domain.errors import (
    ReducerUnavailableError,
    ThreadBusyError,
    ThreadCancelledError,
    ThreadInterruptedError,
    UnknownInterruptError,
)
from domain.oversight.hold_points import question_digest
from domain.record.hashing import GENESIS_HASH
from domain.record.supersteps import START, fold_update
from domain.record.thread import WorkflowThread
from domain.record.thread_state import CANCELLED, FAILED, IDLE, INTERRUPTED, RUNNING
from domain.record.thread_uuids import thread_uuid

ACTOR = {"id": "alice", "role": "reviewer", "authenticated": True, "via": "test"}
HEX32 = re.compile(r"^[0-9a-f]{32}$")


def new_thread(
    channels: dict[str, str | None] | None = None,
    waiting_edges: dict[str, list[str]] | None = None,
    initial: dict[str, Any] | None = None,
) -> WorkflowThread:
    return WorkflowThread.start(
        thread_id="t-1",
        graph_id="refunds",
        graph_digest="d" * 64,
        channels=channels if channels is not None else {"log": "operator:add", "last": None},
        initial=initial if initial is not None else {"log": []},
        waiting_edges=waiting_edges or {},
        metadata={"ticket": "T-7"},
        actor=ACTOR,
    )


def receive_input(thread: WorkflowThread, values: dict[str, Any], routes: list[str]) -> None:
    thread._record(WorkflowThread.InputReceived, run_id="run-1", input=values, actor=ACTOR)
    complete(thread, START, values, routes)


def complete(thread: WorkflowThread, node: str, update: dict[str, Any], routes: list[str]) -> None:
    thread._record(
        WorkflowThread.NodeCompleted,
        step=thread.step + 1,
        node=node,
        task_id=f"task-{node}",
        update=update,
        routes=routes,
        duration_ms=1.0,
    )


def resume(thread: WorkflowThread, interrupt_id: str, value: Any) -> None:
    thread.answer(
        interrupt_id,
        resume=value,
        decision="respond",
        reason="looks right",
        actor=ACTOR,
        idempotency_key=None,
        run_id="run-2",
        separation_of_duties=True,
    )


def running_at(routes: list[str], **kwargs: Any) -> WorkflowThread:
    """Given: a started thread whose input routed to `routes`; no new events pending."""
    thread = new_thread(**kwargs)
    receive_input(thread, {"log": ["in"]}, routes)
    thread.collect_events()
    return thread


def names(events: list[Any]) -> list[str]:
    return [type(event).__name__ for event in events]


# -- starting ----------------------------------------------------------


def test_starting_a_thread_records_thread_started_with_schema_graph_and_actor():
    # When
    thread = new_thread()

    # Then
    [event] = thread.collect_events()
    assert isinstance(event, WorkflowThread.ThreadStarted)
    assert event.originator_id == thread_uuid("t-1")
    assert event.originator_version == 1
    assert event.graph_id == "refunds"
    assert event.channels == {"log": "operator:add", "last": None}
    assert event.metadata == {"ticket": "T-7"}
    assert event.actor == ACTOR
    assert event.prev_hash == GENESIS_HASH


def test_a_new_thread_is_idle_with_its_initial_values_and_no_checkpoint():
    # When
    thread = new_thread()

    # Then
    assert thread.status == IDLE
    assert thread.values == {"log": []}
    assert thread.next == []
    assert thread.checkpoint is None
    assert thread.started_by == ACTOR


def test_the_thread_id_maps_to_the_same_aggregate_id_every_time():
    # Then
    assert thread_uuid("t-1") == thread_uuid("t-1")
    assert thread_uuid("t-1") != thread_uuid("t-2")


# -- input and steps ---------------------------------------------------


def test_input_received_opens_the_start_step_as_an_input_checkpoint():
    # Given
    thread = new_thread()
    thread.collect_events()

    # When
    thread._record(WorkflowThread.InputReceived, run_id="run-1", input={"log": ["x"]}, actor=ACTOR)

    # Then
    [event] = thread.collect_events()
    assert isinstance(event, WorkflowThread.InputReceived)
    assert event.input == {"log": ["x"]}
    assert event.actor == ACTOR
    assert thread.next == [START]
    assert thread.step == -1
    assert thread.status == RUNNING
    assert thread.run_id == "run-1"
    assert thread.checkpoint is not None
    assert thread.checkpoint["source"] == "input"
    assert thread.checkpoint["step"] == -1
    assert thread.checkpoint["version"] == event.originator_version


def test_the_start_task_applies_the_input_and_closes_step_zero_as_a_loop_checkpoint():
    # Given
    thread = new_thread()
    thread._record(WorkflowThread.InputReceived, run_id="run-1", input={"log": ["x"]}, actor=ACTOR)
    thread.collect_events()

    # When
    complete(thread, START, {"log": ["x"], "last": "input"}, ["a"])

    # Then
    [event] = thread.collect_events()
    assert isinstance(event, WorkflowThread.NodeCompleted)
    assert event.step == 0
    assert thread.values == {"log": ["x"], "last": "input"}
    assert thread.next == ["a"]
    assert thread.step == 0
    assert thread.checkpoint is not None
    assert thread.checkpoint["source"] == "loop"
    assert thread.checkpoint["step"] == 0
    assert thread.parent_checkpoint is not None
    assert thread.parent_checkpoint["source"] == "input"


def test_a_step_stays_open_until_every_node_of_the_step_has_completed():
    # Given
    thread = running_at(["a", "b"])
    checkpoint_before = thread.checkpoint

    # When
    complete(thread, "a", {"log": ["a"]}, [])

    # Then
    assert names(thread.collect_events()) == ["NodeCompleted"]
    assert thread.step == 0
    assert thread.next == ["a", "b"]
    assert thread.values == {"log": ["in"]}
    assert thread.current_values() == {"log": ["in", "a"]}
    assert thread.runnable() == ["b"]
    assert thread.checkpoint == checkpoint_before


def test_when_the_last_node_of_a_step_completes_the_updates_are_applied_together():
    # Given
    thread = running_at(["a", "b"])
    complete(thread, "b", {"log": ["b"]}, ["c"])
    thread.collect_events()

    # When
    complete(thread, "a", {"log": ["a"]}, [])

    # Then: folded with the recorded reducer, in node-name order, not completion order
    assert names(thread.collect_events()) == ["NodeCompleted"]
    assert thread.values == {"log": ["in", "a", "b"]}
    assert thread.step == 1
    assert thread.next == ["c"]
    assert thread.done == {}
    assert thread.status == RUNNING


CALLED: list[tuple[Any, Any]] = []


def spy_reducer(old: Any, new: Any) -> Any:
    """Importable by `tests.domain.test_thread:spy_reducer`, and registered by no graph."""
    CALLED.append((old, new))
    return new


@pytest.mark.parametrize("name", ["tests.domain.test_thread:spy_reducer", "builtins:exec"])
def test_a_reducer_no_graph_registered_is_never_looked_up_by_its_recorded_name(name):
    # Given a recorded state whose key names a callable that no graph compiled here registered
    values = {"note": "print('this must not run')"}

    # When
    with pytest.raises(ReducerUnavailableError, match="load the thread's graph"):
        fold_update(values, {"note": "new"}, {"note": name})

    # Then: nothing was imported or called, and the values are as they were
    assert CALLED == []
    assert values == {"note": "print('this must not run')"}


def test_a_last_value_key_keeps_the_value_written_last():
    # Given
    thread = running_at(["a"])

    # When
    complete(thread, "a", {"last": "a"}, ["b"])
    complete(thread, "b", {"last": "b"}, [])

    # Then
    assert thread.values["last"] == "b"


def test_routes_of_a_step_are_merged_without_repeats():
    # Given
    thread = running_at(["a", "b"])

    # When
    complete(thread, "a", {}, ["c", "d"])
    complete(thread, "b", {}, ["d", "c"])

    # Then
    assert thread.next == ["c", "d"]


def test_a_step_with_no_routes_leaves_the_thread_with_nothing_next():
    # Given
    thread = running_at(["a"])

    # When
    complete(thread, "a", {"last": "a"}, [])

    # Then
    assert thread.next == []
    assert thread.status == IDLE


def test_written_in_open_step_names_the_node_that_wrote_each_last_value_key():
    # Given
    thread = running_at(["a", "b"])

    # When
    complete(thread, "a", {"last": "a", "log": ["a"]}, [])

    # Then: only last-value keys count; reducer keys may be written by several nodes
    assert thread.written_in_open_step() == {"last": "a"}


# -- fan-in barrier ----------------------------------------------------


def test_a_waiting_edge_fires_when_all_its_sources_complete_in_one_step():
    # Given
    thread = running_at(["a", "b"], waiting_edges={"join": ["a", "b"]})

    # When
    complete(thread, "a", {"log": ["a"]}, [])
    complete(thread, "b", {"log": ["b"]}, [])

    # Then
    assert thread.next == ["join"]
    assert thread.barriers == {}


def test_a_waiting_edge_holds_until_its_last_source_completes_in_a_later_step():
    # Given: a finishes in step 1, b only in step 2 (after x)
    thread = running_at(["a", "x"], waiting_edges={"join": ["a", "b"]})

    # When
    complete(thread, "a", {"log": ["a"]}, [])
    complete(thread, "x", {"log": ["x"]}, ["b"])

    # Then: the barrier remembers a, and join does not run yet
    assert thread.next == ["b"]
    assert thread.barriers == {"join": ["a"]}

    # When
    complete(thread, "b", {"log": ["b"]}, [])

    # Then
    assert thread.next == ["join"]
    assert thread.barriers == {}


def test_a_source_arriving_twice_does_not_open_the_barrier_alone():
    # Given
    thread = running_at(["a"], waiting_edges={"join": ["a", "b"]})

    # When: a completes in two successive steps
    complete(thread, "a", {}, ["a"])
    complete(thread, "a", {}, [])

    # Then
    assert thread.barriers == {"join": ["a"]}
    assert thread.next == []


# -- interrupts --------------------------------------------------------


def test_raising_an_interrupt_records_it_and_pauses_the_thread():
    # Given
    thread = running_at(["ask"])

    # When
    interrupt_id = thread.raise_interrupt(step=1, node="ask", index=0, value={"q": "ok?"})

    # Then
    [event] = thread.collect_events()
    assert isinstance(event, WorkflowThread.InterruptRaised)
    assert event.interrupt_id == interrupt_id
    assert (event.step, event.node, event.index, event.value) == (1, "ask", 0, {"q": "ok?"})
    assert HEX32.match(interrupt_id)
    assert thread.status == INTERRUPTED
    assert list(thread.interrupts) == [interrupt_id]
    assert thread.interrupts[interrupt_id]["node"] == "ask"
    assert thread.interrupts[interrupt_id]["value"] == {"q": "ok?"}
    assert thread.runnable() == []
    assert thread.pending_nodes() == ["ask"]


def test_an_interrupt_that_asks_for_a_reason_records_it_and_others_do_not():
    # Given
    thread = running_at(["ask", "tell"])

    # When
    asks = thread.raise_interrupt(
        step=1, node="ask", index=0, value="why?", policy={"reason_required": True}
    )
    tells = thread.raise_interrupt(step=1, node="tell", index=0, value="ok?")

    # Then
    first, second = thread.collect_events()
    assert (first.reason_required, second.reason_required) == (True, False)
    assert thread.interrupts[asks]["reason_required"] is True
    assert thread.interrupts[tells]["reason_required"] is False


def test_interrupts_of_parallel_nodes_get_distinct_ids_and_are_all_pending():
    # Given
    thread = running_at(["left", "right"])

    # When
    left = thread.raise_interrupt(step=1, node="left", index=0, value="ask left")
    right = thread.raise_interrupt(step=1, node="right", index=0, value="ask right")

    # Then
    assert left != right
    assert list(thread.interrupts) == [left, right]
    assert thread.status == INTERRUPTED


def test_a_node_asking_again_at_the_same_index_replaces_its_pending_interrupt():
    # Given
    thread = running_at(["ask"])
    first = thread.raise_interrupt(step=1, node="ask", index=0, value="q")
    thread.collect_events()

    # When
    second = thread.raise_interrupt(step=1, node="ask", index=0, value="q")

    # Then
    assert second != first
    assert list(thread.interrupts) == [second]


def test_resuming_an_interrupt_answers_it_and_makes_its_node_runnable_again():
    # Given
    thread = running_at(["ask"])
    interrupt_id = thread.raise_interrupt(step=1, node="ask", index=0, value="q")
    thread.collect_events()

    # When
    resume(thread, interrupt_id, False)

    # Then
    [event] = thread.collect_events()
    assert isinstance(event, WorkflowThread.InterruptResumed)
    assert event.interrupt_id == interrupt_id
    assert event.resume is False
    assert event.decision == "respond"
    assert event.reason == "looks right"
    assert event.actor == ACTOR
    assert event.digest == question_digest("q")
    assert thread.interrupts == {}
    assert thread.answers == {
        "ask": [{"resume": False, "digest": question_digest("q"), "interrupt_id": interrupt_id}]
    }
    assert thread.status == RUNNING
    assert thread.runnable() == ["ask"]
    assert thread.run_id == "run-2"


def test_answers_of_a_node_are_kept_in_the_order_given():
    # Given
    thread = running_at(["ask"])
    first = thread.raise_interrupt(step=1, node="ask", index=0, value="first?")
    resume(thread, first, "A")
    second = thread.raise_interrupt(step=1, node="ask", index=1, value="second?")

    # When
    resume(thread, second, "B")

    # Then
    assert [a["resume"] for a in thread.answers["ask"]] == ["A", "B"]
    assert [a["digest"] for a in thread.answers["ask"]] == [
        question_digest("first?"),
        question_digest("second?"),
    ]


def test_answering_one_of_two_parallel_interrupts_leaves_the_other_pending():
    # Given
    thread = running_at(["left", "right"])
    left = thread.raise_interrupt(step=1, node="left", index=0, value="ask left")
    right = thread.raise_interrupt(step=1, node="right", index=0, value="ask right")

    # When
    resume(thread, left, "L")

    # Then
    assert list(thread.interrupts) == [right]
    assert thread.status == INTERRUPTED
    assert thread.runnable() == ["left"]


def test_a_node_completing_clears_its_answers():
    # Given
    thread = running_at(["ask", "other"])
    interrupt_id = thread.raise_interrupt(step=1, node="ask", index=0, value="q")
    resume(thread, interrupt_id, True)

    # When
    complete(thread, "ask", {"last": True}, [])

    # Then
    assert "ask" not in thread.answers
    assert thread.step == 0  # "other" has not completed yet


# -- failures ----------------------------------------------------------


def test_a_failed_node_marks_the_thread_failed_and_keeps_its_step_open():
    # Given
    thread = running_at(["a"])

    # When
    thread._record(
        WorkflowThread.NodeFailed, step=1, node="a", error_type="ValueError", message="boom"
    )

    # Then
    [event] = thread.collect_events()
    assert isinstance(event, WorkflowThread.NodeFailed)
    assert thread.status == FAILED
    assert thread.error == {"node": "a", "type": "ValueError", "message": "boom"}
    assert thread.step == 0
    assert thread.next == ["a"]
    assert thread.runnable() == ["a"]


def test_a_failed_node_that_then_completes_clears_the_error():
    # Given
    thread = running_at(["a"])
    thread._record(
        WorkflowThread.NodeFailed, step=1, node="a", error_type="ValueError", message="boom"
    )

    # When
    complete(thread, "a", {"last": "a"}, [])

    # Then
    assert thread.error is None
    assert thread.status == IDLE


def test_thread_failed_records_an_error_that_belongs_to_no_node():
    # Given
    thread = running_at(["loop"])

    # When
    thread._record(
        WorkflowThread.ThreadFailed,
        step=1,
        error_type="GraphRecursionError",
        message="Recursion limit of 10 reached",
    )

    # Then
    assert names(thread.collect_events()) == ["ThreadFailed"]
    assert thread.status == FAILED
    assert thread.error == {
        "node": None,
        "type": "GraphRecursionError",
        "message": "Recursion limit of 10 reached",
    }
    assert thread.next == ["loop"]


# -- ending ------------------------------------------------------------


def test_thread_completed_ends_the_run_and_leaves_the_thread_idle():
    # Given
    thread = running_at(["a"])
    complete(thread, "a", {"last": "a"}, [])
    thread.collect_events()

    # When
    thread._record(WorkflowThread.ThreadCompleted, step=thread.step)

    # Then
    assert names(thread.collect_events()) == ["ThreadCompleted"]
    assert thread.run_id is None
    assert thread.status == IDLE


def test_cancelling_drops_pending_interrupts_and_records_who_and_why():
    # Given
    thread = running_at(["ask"])
    thread.raise_interrupt(step=1, node="ask", index=0, value="q")
    thread.collect_events()

    # When
    thread._record(WorkflowThread.ThreadCancelled, step=1, actor=ACTOR, reason="wrong customer")

    # Then
    [event] = thread.collect_events()
    assert isinstance(event, WorkflowThread.ThreadCancelled)
    assert event.actor == ACTOR
    assert event.reason == "wrong customer"
    assert thread.status == CANCELLED
    assert thread.interrupts == {}
    assert thread.cancelled == {"actor": ACTOR, "reason": "wrong customer"}
    assert thread.run_id is None


def test_a_cancelled_thread_stays_cancelled_even_with_work_left():
    # Given
    thread = running_at(["a", "b"])

    # When
    thread._record(WorkflowThread.ThreadCancelled, step=1, actor=ACTOR, reason=None)

    # Then
    assert thread.next == ["a", "b"]
    assert thread.status == CANCELLED


# -- human edits -------------------------------------------------------


def test_state_edited_folds_the_values_and_makes_an_update_checkpoint():
    # Given
    thread = running_at(["a"])
    complete(thread, "a", {"last": "a"}, [])
    thread.collect_events()

    # When
    thread._record(
        WorkflowThread.StateEdited,
        values={"log": ["manual"], "last": "edited"},
        as_node=None,
        next=None,
        actor=ACTOR,
        reason="typo",
    )

    # Then
    [event] = thread.collect_events()
    assert isinstance(event, WorkflowThread.StateEdited)
    assert event.actor == ACTOR
    assert event.reason == "typo"
    assert thread.values == {"log": ["in", "manual"], "last": "edited"}
    assert thread.step == 2
    assert thread.checkpoint is not None
    assert thread.checkpoint["source"] == "update"
    assert thread.checkpoint["step"] == 2


def test_state_edited_with_next_nodes_schedules_them():
    # Given
    thread = running_at(["a"])
    complete(thread, "a", {}, [])

    # When
    thread._record(
        WorkflowThread.StateEdited,
        values={"last": "x"},
        as_node="a",
        next=["b"],
        actor=ACTOR,
        reason=None,
    )

    # Then
    assert thread.next == ["b"]
    assert thread.status == RUNNING


def test_state_edited_drops_keys_the_schema_does_not_have():
    # Given
    thread = running_at(["a"])

    # When
    thread._record(
        WorkflowThread.StateEdited,
        values={"nope": 1},
        as_node=None,
        next=None,
        actor=ACTOR,
        reason=None,
    )

    # Then
    assert "nope" not in thread.values


# -- checkpoints and the chain ----------------------------------------


def test_a_node_completed_makes_a_checkpoint_only_when_it_closes_the_step():
    # Given: a thread in a two-node step, and a twin that records both completions
    thread = running_at(["a", "b"])
    twin = running_at(["a", "b"])
    complete(twin, "a", {}, [])
    [a_done] = twin.collect_events()
    complete(twin, "b", {}, [])
    [b_done] = twin.collect_events()

    # Then
    assert not thread.makes_checkpoint(a_done)
    a_done.mutate(thread)
    assert thread.makes_checkpoint(b_done)


def test_input_and_edits_make_checkpoints_and_interrupts_do_not():
    # Given
    thread = running_at(["ask"])
    twin = running_at(["ask"])
    twin.raise_interrupt(step=1, node="ask", index=0, value="q")
    twin._record(
        WorkflowThread.StateEdited,
        values={},
        as_node=None,
        next=None,
        actor=ACTOR,
        reason=None,
    )
    raised, edited = twin.collect_events()
    fresh = new_thread()
    fresh_twin = new_thread()
    fresh_twin.collect_events()
    fresh_twin._record(WorkflowThread.InputReceived, run_id="r", input={}, actor=ACTOR)
    [received] = fresh_twin.collect_events()

    # Then
    assert not thread.makes_checkpoint(raised)
    assert thread.makes_checkpoint(edited)
    assert fresh.makes_checkpoint(received)


def test_every_event_chains_to_the_hash_of_the_one_before():
    # Given
    thread = new_thread()
    receive_input(thread, {"log": ["in"]}, ["ask"])
    interrupt_id = thread.raise_interrupt(step=1, node="ask", index=0, value="q")
    resume(thread, interrupt_id, True)
    complete(thread, "ask", {"last": True}, [])

    # When
    events = thread.collect_events()

    # Then
    assert [e.originator_version for e in events] == list(range(1, len(events) + 1))
    assert events[0].prev_hash == GENESIS_HASH
    for before, after in pairwise(events):
        assert after.prev_hash == before.event_hash
    assert len({e.event_hash for e in events}) == len(events)
    assert thread.head_hash == events[-1].event_hash


def test_a_field_left_to_its_default_is_recorded_and_hashed_with_the_rest(store):
    # Given a NodeCompleted recorded without `applied` (the fields of a later version)
    thread = new_thread()
    receive_input(thread, {"log": ["in"]}, [])

    # When it is stored and read back
    store.record(thread)
    [*_, completed] = store.recorded_events(thread.thread_id)

    # Then the default is in the record, and the chain verifies as stored
    assert completed.state["applied"] is None
    assert store.verify_chain(thread.thread_id).ok


# -- the aggregate refuses what may not happen to it -----------------------------


def test_a_paused_thread_refuses_new_input_and_records_nothing():
    # Given
    thread = running_at(["ask"])
    thread.raise_interrupt(step=1, node="ask", index=0, value="q")
    thread.collect_events()

    # When / Then
    with pytest.raises(ThreadInterruptedError):
        thread.receive_input("run-2", {"log": ["again"]}, ["ask"], ACTOR)
    assert thread.collect_events() == []


def test_a_thread_in_the_middle_of_a_run_refuses_new_input():
    thread = running_at(["ask"])

    with pytest.raises(ThreadBusyError):
        thread.receive_input("run-2", {}, [], ACTOR)


def test_a_cancelled_thread_refuses_an_edit_and_a_second_cancel():
    # Given
    thread = running_at(["ask"])
    thread.cancel(ACTOR, "wrong customer")
    thread.collect_events()

    # When / Then
    with pytest.raises(ThreadCancelledError):
        thread.edit({"log": ["x"]}, ACTOR, None)
    with pytest.raises(ThreadCancelledError):
        thread.cancel(ACTOR, "again")
    assert thread.collect_events() == []


def test_new_input_starts_a_run_with_the_start_task_done():
    # Given a thread at rest
    thread = new_thread()

    # When
    thread.receive_input("run-1", {"log": ["in"]}, ["ask"], ACTOR)

    # Then
    names = [type(e).__name__ for e in thread.collect_events()]
    assert names[-2:] == ["InputReceived", "NodeCompleted"]
    assert thread.next == ["ask"]


def test_an_answer_to_an_interrupt_that_is_not_pending_is_refused():
    thread = running_at(["ask"])

    with pytest.raises(UnknownInterruptError):
        resume(thread, "0" * 32, True)
    assert thread.collect_events() == []
