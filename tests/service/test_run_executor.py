"""Runs go one after another on one thread while they compute, beside it when one waits.

Given a `RunExecutor`, when jobs are submitted, then they run in order on its
lead thread; a job that waits inside `may_wait` for longer than a turn lets
the jobs behind it run on helper threads; and through `RunManager`, a run
whose node waits on I/O does not hold up another thread's run.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, TypedDict

import pytest

from domain.record.store import open_store
from projections.database import database_for
from service.run_executor import RunExecutor
from service.run_store import RunStore
from service.runs import RunManager, RunRequest
from tests.graphs import linear_graph

WAIT = 10.0  # seconds to wait for what must happen: a failure waits this long, a pass does not


@pytest.fixture
def executor():
    runs = RunExecutor(workers=4, turn=0.01)
    yield runs
    runs.shutdown()


def test_jobs_that_do_not_wait_run_in_order_on_one_thread(executor):
    ran: list[tuple[int, str]] = []
    done = threading.Event()

    def job(n: int) -> None:
        ran.append((n, threading.current_thread().name))
        if n == 49:
            done.set()

    for n in range(50):
        executor.submit(lambda n=n: job(n))

    assert done.wait(WAIT)
    assert [n for n, _ in ran] == list(range(50))
    assert {name for _, name in ran} == {"holdpoint-run-lead"}


def test_a_job_that_waits_longer_than_a_turn_lets_the_next_run_beside_it(executor):
    waiting, released, second_ran = threading.Event(), threading.Event(), threading.Event()

    def slow() -> None:
        with executor.may_wait():  # as graph code waiting on I/O
            waiting.set()
            released.wait(WAIT)

    executor.submit(slow)
    assert waiting.wait(WAIT)
    executor.submit(second_ran.set)

    assert second_ran.wait(WAIT), "the second job waited for the first one's I/O"
    assert not released.is_set()
    released.set()


def test_jobs_behind_a_waiting_job_all_go_beside_it(executor):
    released = threading.Event()
    barrier = threading.Barrier(3, timeout=WAIT)  # the two jobs behind it, and this test

    def slow() -> None:
        with executor.may_wait():
            released.wait(WAIT)

    executor.submit(slow)
    for _ in range(2):
        executor.submit(barrier.wait)

    barrier.wait()  # both ran at once, while the first still waits
    released.set()


def test_a_long_wait_after_many_short_ones_lets_the_job_behind_it_run_beside_it(executor):
    # The watchman is not woken at every section once it is timing: short sections and
    # stretches of computing with a job queued behind, then one that waits on I/O.
    queued, released, behind_ran = threading.Event(), threading.Event(), threading.Event()

    def busy() -> None:
        assert queued.wait(WAIT)
        for _ in range(20):
            with executor.may_wait():
                pass
            time.sleep(executor.turn / 4)  # computing, outside any section
        with executor.may_wait():
            released.wait(WAIT)

    executor.submit(busy)
    executor.submit(behind_ran.set)
    queued.set()

    assert behind_ran.wait(WAIT), "the job behind waited for the lead's I/O"
    assert not released.is_set()
    released.set()


def test_a_job_that_fails_does_not_stop_the_lead(executor):
    ran = threading.Event()

    def fails() -> None:
        raise RuntimeError("a job's own error")

    executor.submit(fails)
    executor.submit(ran.set)

    assert ran.wait(WAIT)


def test_a_turn_of_zero_runs_every_job_at_once():
    runs = RunExecutor(workers=3, turn=0)
    barrier = threading.Barrier(4, timeout=WAIT)
    try:
        for _ in range(3):
            runs.submit(barrier.wait)  # each waits for the others, outside `may_wait`
        barrier.wait()
    finally:
        runs.shutdown()


def test_one_worker_runs_the_jobs_in_order_on_the_lead_alone():
    runs = RunExecutor(workers=1, turn=0.01)
    names: list[str] = []
    for _ in range(5):
        runs.submit(lambda: names.append(threading.current_thread().name))
    runs.shutdown()

    assert names == ["holdpoint-run-lead"] * 5


def test_shutdown_runs_the_jobs_submitted_and_refuses_new_ones():
    runs = RunExecutor(workers=2, turn=0.01)
    ran: list[int] = []
    for n in range(20):
        runs.submit(lambda n=n: ran.append(n))
    runs.shutdown()

    assert ran == list(range(20))
    with pytest.raises(RuntimeError, match="after shutdown"):
        runs.submit(lambda: None)


class Lookup(TypedDict):
    key: str
    found: Any


RELEASE: dict[str, threading.Event] = {}  # per thread id: the I/O a `lookup` node waits for


def lookup(state: Lookup) -> dict[str, Any]:
    """A node that waits on I/O: until the test releases its key."""
    gate = RELEASE.get(state["key"])
    if gate is not None:
        assert gate.wait(WAIT)
    return {"found": state["key"].upper()}


def _request(graph: Any, thread_id: str, key: str, *, wait: bool = False) -> RunRequest:
    return RunRequest(
        graph=graph,
        thread_id=thread_id,
        input={"key": key},
        config={"configurable": {"thread_id": thread_id}},
        stream_modes=("values",),
        assistant_id="lookup",
        wait=wait,
    )


@pytest.fixture
def lookups():
    """The lookup graph and a RunManager with a lead thread; the node of key "slow" waits
    for the gate this yields too, released (if the test did not) before the manager stops."""
    with open_store("memory://") as store:
        runs = RunStore(database_for(store))
        manager = RunManager(
            store=runs, workers=4, busy_wait=WAIT, keep=100, lease_ttl=WAIT, turn=0.01
        )
        gate = RELEASE["slow"] = threading.Event()
        try:
            yield linear_graph(store, Lookup, lookup, name="lookup"), manager, gate
        finally:
            RELEASE.pop("slow").set()
            manager.shutdown()
            runs.close()


def test_a_run_whose_node_waits_on_io_does_not_hold_up_another_threads_run(lookups):
    graph, manager, gate = lookups

    async def scenario() -> tuple[Any, Any]:
        slow = manager.launch(lambda: _request(graph, "t-slow", "slow"), until_done=True)
        fast = manager.launch(lambda: _request(graph, "t-fast", "fast"), until_done=True)
        fast_record = await asyncio.wait_for(fast, WAIT)
        assert not slow.done(), "the slow run's node still waits"
        gate.set()
        return fast_record, await asyncio.wait_for(slow, WAIT)

    fast_record, slow_record = asyncio.run(scenario())

    assert fast_record.output == {"key": "fast", "found": "FAST"}
    assert slow_record.output == {"key": "slow", "found": "SLOW"}


def test_a_run_that_waits_for_its_threads_lock_does_not_hold_up_another_threads_run(lookups):
    graph, manager, gate = lookups

    async def scenario() -> tuple[Any, Any]:
        # A decision's run holds thread t-busy (its node waits on I/O) ...
        holder = await asyncio.to_thread(manager.start, _request(graph, "t-busy", "slow"))
        # ... so the next run on t-busy waits for the thread's lock, on the lead.
        queued = manager.launch(
            lambda: _request(graph, "t-busy", "next", wait=True), until_done=True
        )
        fast = manager.launch(lambda: _request(graph, "t-other", "fast"), until_done=True)
        fast_record = await asyncio.wait_for(fast, WAIT)
        assert not queued.done(), "the run on the busy thread still waits for its lock"
        gate.set()
        await asyncio.wait_for(queued, WAIT)
        assert holder.output == {"key": "slow", "found": "SLOW"}
        return fast_record, queued.result()

    fast_record, queued_record = asyncio.run(scenario())

    assert fast_record.output == {"key": "fast", "found": "FAST"}
    assert queued_record.output == {"key": "next", "found": "NEXT"}


class HeldManager(RunManager):
    """A RunManager whose runs wait at `held` between beginning and their first step."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.held = threading.Event()

    def finish(self, begun: Any) -> None:
        assert self.held.wait(WAIT)
        super().finish(begun)


def test_a_launched_run_is_running_once_it_has_begun_before_its_first_step():
    # What the route reads to drop the thread's reservation: a pending record there would
    # leave a reserved thread listed twice by a search, once reserved and once recorded.
    with open_store("memory://") as store:
        runs = RunStore(database_for(store))
        manager = HeldManager(store=runs, workers=2, busy_wait=WAIT, keep=10, lease_ttl=WAIT)
        graph = linear_graph(store, Lookup, lookup, name="lookup")
        try:

            async def scenario() -> str:
                record = await asyncio.wait_for(
                    manager.launch(lambda: _request(graph, "t-held", "held")), WAIT
                )
                return str(record.status)

            assert asyncio.run(scenario()) == "running"
        finally:
            manager.held.set()
            manager.shutdown()
            runs.close()
