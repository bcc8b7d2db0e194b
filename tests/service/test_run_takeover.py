"""A run taken over by another runner, on each store kind: given a run whose runner let
its lease expire, when a live runner's worker sweeps, then how the run goes on."""

from __future__ import annotations

import threading
from typing import Any, TypedDict

from domain.record.application import Workflows
from projections.database import database_for
from service.run_store import RunStore
from service.run_worker import RunWorker
from service.runs import RunManager, RunRequest
from tests.graphs import linear_graph
from tests.service.leases import expire

TTL = 60.0


class Steps(TypedDict):
    log: str


def a_manager(runs: RunStore) -> RunManager:
    """A runner (a process, as far as the store can tell) on the store's runs."""
    return RunManager(store=runs, workers=2, busy_wait=0.0, keep=10, lease_ttl=TTL)


def request(graph: Any, thread_id: str, graph_input: Any, **configurable: Any) -> RunRequest:
    return RunRequest(
        graph=graph,
        thread_id=thread_id,
        input=graph_input,
        config={"configurable": {"thread_id": thread_id, **configurable}},
        stream_modes=("values",),
        assistant_id="gated",
    )


def forks_recorded(store: Workflows) -> int:
    notifications = store.recorder.select_notifications(start=1, limit=10_000)
    return sum(1 for n in notifications if n.topic.endswith("ThreadForked"))


def test_a_run_from_a_past_checkpoint_taken_over_goes_on_on_its_fork(store):
    calls: list[str] = []
    entered, gate = threading.Event(), threading.Event()

    def first(state: Steps) -> dict[str, Any]:
        return {"log": state["log"] + "1"}

    def work(state: Steps) -> dict[str, Any]:
        calls.append(threading.current_thread().name)
        if len(calls) == 2:  # the fork's first runner hangs here, and dies (its lease expires)
            entered.set()
            assert gate.wait(10)
        return {"log": state["log"] + "2"}

    graph = linear_graph(store, Steps, first, work, name="gated")
    runs = RunStore(database_for(store))
    one, two = a_manager(runs), a_manager(runs)
    try:
        done = one.start(request(graph, "t-1", {"log": ""}))
        assert done.wait_blocking(10)
        past = next(
            s.config["configurable"]["checkpoint_id"]
            for s in graph.get_state_history({"configurable": {"thread_id": "t-1"}})
            if s.next == ("work",)
        )
        hung = one.start(request(graph, "t-1", None, checkpoint_id=past))
        fork_id = hung.thread_id
        assert fork_id != "t-1"
        assert entered.wait(10)
        expire(one.store, hung.thread_id)  # its runner stops renewing

        RunWorker(two, store, {"gated": graph}, poll=1.0).sweep()
        taken = two.local(hung.run_id)
        assert taken is not None
        assert taken.wait_blocking(10)

        stored = two.store.get(hung.run_id)
        assert stored is not None
        assert (stored.status, stored.attempt, stored.run_thread_id) == ("success", 2, fork_id)
        assert store.thread(fork_id).values["log"] == "12"
        assert forks_recorded(store) == 1  # taken over on its fork, not forked again
        assert len(calls) == 3  # the first run's, the hung one's, the taker's
    finally:
        gate.set()
        one.shutdown()
        two.shutdown()
        runs.close()
