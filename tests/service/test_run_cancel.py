"""Cancelling a run (LangGraph's `runs.cancel`, action interrupt), on each store kind.

Given a run whose node is at work, when someone asks it to stop, then it stops at the
step's end: the node finishes and is recorded, nothing after it runs, and its runner
records RunCancelled with who asked and why; the run ends `interrupted`, and a later run
continues the thread from there. The request is in the store, so a runner in another
process sees it when it renews its leases, and a runner that takes over a cancelled run
ends it instead of running it. A queued run is cancelled at once, recording nothing on
its thread."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypedDict

import pytest
from langgraph.graph import StateGraph as LangGraphStateGraph

from domain.graph import END, START, StateGraph
from projections.database import database_for
from service.errors import RunNotActiveError, RunNotFoundError
from service.langgraph_app import LangGraphApp
from service.run_store import RunStore
from service.run_worker import RunWorker
from service.runs import RunManager, RunRequest
from tests.service.leases import expire

TTL = 60.0
REVIEWER = {"id": "rita", "role": "reviewer"}


class Steps(TypedDict):
    log: str


class Gate:
    """A node that waits at work until the test lets it go."""

    def __init__(self) -> None:
        self.entered, self.released = threading.Event(), threading.Event()
        self.calls = 0

    def work(self, state: Steps) -> dict[str, Any]:
        self.calls += 1
        self.entered.set()
        assert self.released.wait(10)
        return {"log": state["log"] + "w"}


def first(state: Steps) -> dict[str, Any]:
    return {"log": state["log"] + "f"}


def last(state: Steps) -> dict[str, Any]:
    return {"log": state["log"] + "l"}


def steps(builder: Any, gate: Gate, *, then_last: bool = True) -> Any:
    """first -> work (at the gate) -> last, on either engine's builder (their START and
    END are the same strings)."""
    builder.add_node("first", first)
    builder.add_node("work", gate.work)
    builder.add_edge(START, "first")
    builder.add_edge("first", "work")
    if then_last:
        builder.add_node("last", last)
        builder.add_edge("work", "last")
    builder.add_edge("last" if then_last else "work", END)
    return builder


def native_graph(store: Any, gate: Gate) -> Any:
    return steps(StateGraph(Steps), gate).compile(checkpointer=store, name="steps")


def langgraph_graph(store: Any, gate: Gate) -> Any:
    return LangGraphApp(steps(LangGraphStateGraph(Steps), gate).compile(), "steps", store)


ENGINES = {"native": native_graph, "langgraph": langgraph_graph}


@contextmanager
def running(store: Any, count: int) -> Iterator[tuple[Gate, RunStore, list[RunManager]]]:
    """A gate and `count` run managers (processes, as far as the store can tell) on the
    store; on leaving, the gate is open and the managers are shut down."""
    gate, runs = Gate(), RunStore(database_for(store))
    made = [
        RunManager(store=runs, workers=2, busy_wait=0.0, keep=10, lease_ttl=TTL)
        for _ in range(count)
    ]
    try:
        yield gate, runs, made
    finally:
        gate.released.set()
        for manager in made:
            manager.shutdown()


def request(graph: Any, thread_id: str, value: Any, **fields: Any) -> RunRequest:
    return RunRequest(
        graph=graph,
        thread_id=thread_id,
        input=value,
        config={"configurable": {"thread_id": thread_id}},
        stream_modes=("values",),
        assistant_id="steps",
        **fields,
    )


def kinds(store: Any, thread_id: str) -> list[str]:
    return [type(e).__name__ for e in store.thread_events(thread_id)]


@pytest.mark.parametrize("engine", list(ENGINES))
def test_a_running_run_stops_at_the_steps_end_and_its_runner_records_who_asked(store, engine):
    with running(store, 1) as (gate, runs, (manager,)):
        graph = ENGINES[engine](store, gate)
        # Given a run at work in its second node
        record = manager.start(request(graph, "t-1", {"log": ""}))
        assert gate.entered.wait(10)
        # When a reviewer cancels it, and the node then finishes
        manager.cancel(record.run_id, REVIEWER, "wrong customer")
        gate.released.set()
        assert record.wait_blocking(10)
        # Then the run ended interrupted, with the values it left
        stored = runs.get(record.run_id)
        assert stored is not None
        assert (stored.status, stored.output) == ("interrupted", {"log": "fw"})
        # And the node at work was recorded, nothing after it ran, and the cancel is on record
        (cancelled,) = [e for e in store.thread_events("t-1") if type(e).__name__ == "RunCancelled"]
        assert (cancelled.run_id, cancelled.actor, cancelled.reason) == (
            record.run_id,
            REVIEWER,
            "wrong customer",
        )
        assert kinds(store, "t-1")[-1] == "RunCancelled"
        assert store.thread("t-1").status == "idle"
        assert store.verify_chain("t-1").ok
        # And a later run continues from there: `last` runs once, `work` not again
        again = manager.start(request(graph, "t-1", None))
        assert again.wait_blocking(10)
        assert runs.get(again.run_id).output == {"log": "fwl"}
        assert gate.calls == 1
        # And an ended run cannot be cancelled; an unknown one is not found
        with pytest.raises(RunNotActiveError):
            manager.cancel(record.run_id, REVIEWER, None)
        with pytest.raises(RunNotFoundError):
            manager.cancel("no-such-run", REVIEWER, None)


def test_a_run_of_another_process_stops_when_its_runner_renews(store):
    with running(store, 2) as (gate, runs, (runner, other)):
        graph = native_graph(store, gate)
        record = runner.start(request(graph, "t-2", {"log": ""}))
        assert gate.entered.wait(10)
        # When another process takes the cancel: it is asked of the run, in the store
        other.cancel(record.run_id, REVIEWER, None)
        assert runs.get(record.run_id).status == "running"
        # Then the runner sees it when it renews its leases, and stops at the step's end
        RunWorker(runner, store, {"steps": graph}, poll=1.0).renew()
        gate.released.set()
        assert record.wait_blocking(10)
        assert runs.get(record.run_id).status == "interrupted"
        assert kinds(store, "t-2")[-1] == "RunCancelled"
        assert store.thread("t-2").next == ["last"]


def test_a_cancelled_run_taken_over_is_ended_not_run(store):
    with running(store, 2) as (gate, runs, (hung, taker)):
        graph = native_graph(store, gate)
        # Given a run whose runner hangs at work, cancelled, then its lease expired
        record = hung.start(request(graph, "t-3", {"log": ""}))
        assert gate.entered.wait(10)
        taker.cancel(record.run_id, REVIEWER, "stuck")
        expire(runs, "t-3")
        # When a live runner sweeps
        RunWorker(taker, store, {"steps": graph}, poll=1.0).sweep()
        # Then it records the cancel and ends the run; the node is not run again
        assert runs.get(record.run_id).status == "interrupted"
        events = kinds(store, "t-3")
        assert events[-1] == "RunCancelled"
        assert "RunReclaimed" not in events
        assert gate.calls == 1


def test_a_queued_run_is_cancelled_at_once_and_records_nothing_on_its_thread(store):
    with running(store, 1) as (gate, runs, (manager,)):
        graph = native_graph(store, gate)
        first = manager.start(request(graph, "t-4", {"log": ""}))
        assert gate.entered.wait(10)
        queued = manager.start(request(graph, "t-4", None, multitask_strategy="enqueue"))
        assert runs.get(queued.run_id).status == "pending"
        before = kinds(store, "t-4")
        manager.cancel(queued.run_id, REVIEWER, None)
        stored = runs.get(queued.run_id)
        assert stored.status == "interrupted"
        assert stored.output == {"__cancel__": {"actor": REVIEWER, "reason": None}}
        assert kinds(store, "t-4") == before
        gate.released.set()
        assert first.wait_blocking(10)
        assert runs.get(first.run_id).status == "success"


def test_a_cancel_during_the_last_step_is_too_late_and_the_run_ends_as_it_ended(store):
    with running(store, 1) as (gate, runs, (manager,)):
        builder = steps(StateGraph(Steps), gate, then_last=False)
        graph = builder.compile(checkpointer=store, name="steps")
        record = manager.start(request(graph, "t-5", {"log": ""}))
        assert gate.entered.wait(10)
        manager.cancel(record.run_id, REVIEWER, None)
        gate.released.set()
        assert record.wait_blocking(10)
        # Then it ended as it ended: a success, its thread free at once, no RunCancelled
        stored = runs.get(record.run_id)
        assert (stored.status, stored.output) == ("success", {"log": "fw"})
        assert runs.holder("t-5") is None
        assert "RunCancelled" not in kinds(store, "t-5")
