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
from typing import Any, TypedDict

import pytest
from langgraph.graph import END as LG_END
from langgraph.graph import START as LG_START
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


def native_graph(store: Any, gate: Gate) -> Any:
    builder = StateGraph(Steps)
    builder.add_node("first", first)
    builder.add_node("work", gate.work)
    builder.add_node("last", last)
    builder.add_edge(START, "first")
    builder.add_edge("first", "work")
    builder.add_edge("work", "last")
    builder.add_edge("last", END)
    return builder.compile(checkpointer=store, name="steps")


def langgraph_graph(store: Any, gate: Gate) -> Any:
    builder = LangGraphStateGraph(Steps)
    builder.add_node("first", first)
    builder.add_node("work", gate.work)
    builder.add_node("last", last)
    builder.add_edge(LG_START, "first")
    builder.add_edge("first", "work")
    builder.add_edge("work", "last")
    builder.add_edge("last", LG_END)
    return LangGraphApp(builder.compile(), "steps", store)


ENGINES = {"native": native_graph, "langgraph": langgraph_graph}


def managers(store: Any, count: int) -> tuple[RunStore, list[RunManager]]:
    runs = RunStore(database_for(store))
    made = [
        RunManager(store=runs, workers=2, busy_wait=0.0, keep=10, lease_ttl=TTL)
        for _ in range(count)
    ]
    return runs, made


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
    gate = Gate()
    graph = ENGINES[engine](store, gate)
    runs, (manager,) = managers(store, 1)
    try:
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
        assert stored.status == "interrupted"
        assert stored.output == {"log": "fw"}
        # And the node at work was recorded, nothing after it ran, and the cancel is on record
        (cancelled,) = [e for e in store.thread_events("t-1") if type(e).__name__ == "RunCancelled"]
        assert (cancelled.run_id, cancelled.actor, cancelled.reason) == (
            record.run_id,
            REVIEWER,
            "wrong customer",
        )
        assert kinds(store, "t-1")[-1] == "RunCancelled"
        thread = store.thread("t-1")
        assert thread.status == "idle"
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
    finally:
        gate.released.set()
        manager.shutdown()


def test_a_run_of_another_process_stops_when_its_runner_renews(store):
    gate = Gate()
    graph = native_graph(store, gate)
    runs, (runner, other) = managers(store, 2)
    try:
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
    finally:
        gate.released.set()
        runner.shutdown()
        other.shutdown()


def test_a_cancelled_run_taken_over_is_ended_not_run(store):
    gate = Gate()
    graph = native_graph(store, gate)
    runs, (hung, taker) = managers(store, 2)
    try:
        # Given a run whose runner hangs at work, cancelled, then its lease expired
        record = hung.start(request(graph, "t-3", {"log": ""}))
        assert gate.entered.wait(10)
        taker.cancel(record.run_id, REVIEWER, "stuck")
        expire(runs, "t-3")
        # When a live runner sweeps
        RunWorker(taker, store, {"steps": graph}, poll=1.0).sweep()
        # Then it records the cancel and ends the run; the node is not run again
        stored = runs.get(record.run_id)
        assert stored.status == "interrupted"
        events = kinds(store, "t-3")
        assert events[-1] == "RunCancelled"
        assert "RunReclaimed" not in events
        assert gate.calls == 1
    finally:
        gate.released.set()
        hung.shutdown()
        taker.shutdown()


def test_a_queued_run_is_cancelled_at_once_and_records_nothing_on_its_thread(store):
    gate = Gate()
    graph = native_graph(store, gate)
    runs, (manager,) = managers(store, 1)
    try:
        running = manager.start(request(graph, "t-4", {"log": ""}))
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
        assert running.wait_blocking(10)
        assert runs.get(running.run_id).status == "success"
    finally:
        gate.released.set()
        manager.shutdown()


def test_a_cancel_during_the_last_step_is_too_late_and_the_run_ends_as_it_ended(store):
    gate = Gate()
    builder = StateGraph(Steps)
    builder.add_node("first", first)
    builder.add_node("work", gate.work)
    builder.add_edge(START, "first")
    builder.add_edge("first", "work")
    builder.add_edge("work", END)
    graph = builder.compile(checkpointer=store, name="steps")
    runs, (manager,) = managers(store, 1)
    try:
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
    finally:
        gate.released.set()
        manager.shutdown()
