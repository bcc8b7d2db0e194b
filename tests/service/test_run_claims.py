"""A run claims its thread before any node code runs, on each store kind: given a thread
and who holds its lease, when a run begins, then what the store holds.

On PostgreSQL a run that records its input or answer claims the lease in that very
commit (`RunStore.guard`); refused, it has written nothing: no event, no run, no lease.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any, TypedDict

import pytest

from domain.errors import InvalidUpdateError
from domain.record.application import Workflows
from domain.record.store import open_store
from domain.types import Command
from projections.database import database_for
from service.errors import RunInProgressError
from service.run_store import RunStore, StoredRun
from service.runs import RunManager, RunRequest
from tests.graphs import linear_graph, refund_graph

TTL = 60.0


@pytest.fixture
def manager(store: Workflows) -> Iterator[RunManager]:
    runs = RunStore(database_for(store))
    made = RunManager(store=runs, workers=1, busy_wait=0.0, keep=10, lease_ttl=TTL)
    yield made
    made.shutdown()
    made.store.close()


def request(graph: Any, thread_id: str, graph_input: Any) -> RunRequest:
    return RunRequest(
        graph=graph,
        thread_id=thread_id,
        input=graph_input,
        config={"configurable": {"thread_id": thread_id}},
        stream_modes=("values",),
        assistant_id="refund",
    )


def run_to_end(manager: RunManager, run_request: RunRequest) -> str:
    record = manager.start(run_request)
    assert record.wait_blocking(10)
    return record.status


def held_by_another_runner(manager: RunManager, thread_id: str) -> None:
    other = StoredRun("r-other", thread_id, "refund", "refund", request={"input": None})
    assert manager.store.open(other, "another-process", TTL, enqueue=False, durable=True).started


def test_a_run_with_input_ends_recorded_and_its_thread_free(store, manager):
    graph = refund_graph(store)

    status = run_to_end(manager, request(graph, "t-1", {"refund_amount": 250.0}))

    assert status == "success"
    (run,) = manager.store.of_thread("t-1", limit=10)
    assert (run.status, run.owner) == ("success", manager.owner)
    assert manager.store.holder("t-1") is None
    assert store.thread("t-1").interrupts  # it paused at the review


def test_a_resume_while_another_runner_holds_the_thread_is_refused_and_writes_nothing(
    store, manager
):
    graph = refund_graph(store)
    run_to_end(manager, request(graph, "t-1", {"refund_amount": 250.0}))
    paused = store.thread("t-1")
    held_by_another_runner(manager, "t-1")

    with pytest.raises(RunInProgressError) as refused:
        manager.start(request(graph, "t-1", Command(resume={next(iter(paused.interrupts)): 1})))

    assert "r-other" in str(refused.value)
    assert store.thread("t-1").version == paused.version  # no answer recorded
    statuses = {run.run_id: run.status for run in manager.store.of_thread("t-1", limit=10)}
    assert sorted(statuses.values()) == ["running", "success"]  # r-other's and the first's
    assert statuses["r-other"] == "running"
    assert manager.store.holder("t-1") == "r-other"


def test_a_first_run_on_a_thread_another_runner_holds_records_no_thread(store, manager):
    graph = refund_graph(store)
    held_by_another_runner(manager, "t-new")

    with pytest.raises(RunInProgressError):
        manager.start(request(graph, "t-new", {"refund_amount": 250.0}))

    assert store.thread("t-new") is None
    assert [run.run_id for run in manager.store.of_thread("t-new", limit=10)] == ["r-other"]


def test_a_refused_input_frees_the_thread_and_forgets_the_run(store, manager):
    graph = refund_graph(store)

    with pytest.raises(InvalidUpdateError, match="must be a dict"):
        manager.start(request(graph, "t-1", "not a dict"))

    assert manager.store.of_thread("t-1", limit=10) == []
    assert manager.store.holder("t-1") is None
    assert store.thread("t-1") is None


def test_a_finished_run_is_recorded_at_the_position_of_its_last_step(store, manager):
    graph = refund_graph(store)

    record = manager.start(request(graph, "t-1", {"refund_amount": 250.0}))
    assert record.wait_blocking(10)

    stored = manager.store.get(record.run_id)
    assert stored is not None
    assert stored.status == "success"
    assert stored.position == record.position == store.recorder.max_notification_id()
    assert stored.output is not None
    assert "__interrupt__" in stored.output


class Gated(TypedDict):
    done: bool


def test_a_run_taken_over_before_its_last_step_writes_nothing_of_it(postgres_url):
    """PostgreSQL: the last step commits with the run's end, only while its runner still
    holds the run (a runner that lost it to a takeover leaves the node to the taker)."""
    gate = threading.Event()

    def work(state: Gated) -> dict[str, Any]:
        assert gate.wait(10)
        return {"done": True}

    with open_store(postgres_url) as store:
        runs = RunStore(database_for(store))
        manager = RunManager(store=runs, workers=1, busy_wait=0.0, keep=10, lease_ttl=TTL)
        graph = linear_graph(store, Gated, work)
        record = manager.start(request(graph, "t-1", {"done": False}))
        begun = store.thread("t-1")
        with runs.db.transaction() as cursor:  # as a takeover does, while `work` runs
            cursor.execute(
                f"UPDATE {runs.db.table('holdpoint_runs')} SET owner = 'taker' WHERE run_id = %s",
                (record.run_id,),
            )
        gate.set()
        record.wait_blocking(10)
        manager.shutdown()

        assert store.thread("t-1").version == begun.version  # `work`'s step not written
        stored = runs.get(record.run_id)
        assert stored is not None
        assert (stored.status, stored.owner) == ("running", "taker")
        runs.close()


def test_a_decision_waits_for_a_runner_that_holds_the_thread_then_begins(store):
    """A resume that waits (a decision) and finds the thread held retries its claim
    once the holder lets go: on PostgreSQL a refused guarded commit, then a new one."""
    runs = RunStore(database_for(store))
    waiting = RunManager(store=runs, workers=1, busy_wait=10.0, keep=10, lease_ttl=TTL)
    try:
        graph = refund_graph(store)
        first = waiting.start(request(graph, "t-1", {"refund_amount": 250.0}))
        assert first.wait_blocking(10)
        paused = store.thread("t-1")
        other = StoredRun("r-other", "t-1", "refund", "refund", request={"input": None})
        assert runs.open(other, "another-process", TTL, enqueue=False, durable=True).started
        answer = request(graph, "t-1", Command(resume={next(iter(paused.interrupts)): 1}))
        answer.wait = True
        refused = threading.Event()  # the decider's claim was refused: it waits
        wait_for_thread = waiting._wait_for_thread

        def spied(*args: Any) -> bool:
            refused.set()
            return wait_for_thread(*args)

        waiting._wait_for_thread = spied  # type: ignore[method-assign]
        began: list[Any] = []
        decider = threading.Thread(target=lambda: began.append(waiting.start(answer)))
        decider.start()
        assert refused.wait(10)
        assert store.thread("t-1").version == paused.version  # nothing written meanwhile

        assert runs.finish("r-other", "t-1", "another-process", "success", {}, None)
        decider.join(10)

        [record] = began
        assert record.wait_blocking(10)
        assert record.status == "success"
        assert store.thread("t-1").values["approved"] == 1
    finally:
        waiting.shutdown()
        runs.close()
