"""A real LangGraph graph's run taken over, on each store kind: given a served LangGraph
graph whose runner let its lease expire mid-node (it died, or stalled), when a live
runner's worker sweeps, then the run goes on from the thread's last checkpoint: the node
runs again, once, the takeover is on record, and the thread completes."""

from __future__ import annotations

import threading
import time
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph

from projections.database import database_for
from service.langgraph_app import LangGraphApp
from service.run_store import RunStore
from service.run_worker import RunWorker
from service.runs import RunManager, RunRequest
from tests.service.leases import expire

TTL = 60.0


class Steps(TypedDict):
    log: str


def runnable(store: Any, thread_id: str) -> list[str]:
    thread = store.thread(thread_id)
    return [] if thread is None else thread.runnable()


def test_a_langgraph_run_whose_lease_expired_is_taken_over_and_completes(store):
    calls: list[str] = []
    entered, gate = threading.Event(), threading.Event()

    def first(state: Steps) -> dict[str, Any]:
        return {"log": state["log"] + "1"}

    def work(state: Steps) -> dict[str, Any]:
        calls.append(threading.current_thread().name)
        if len(calls) == 1:  # the first runner hangs here (and, as far as the store can tell, dies)
            entered.set()
            assert gate.wait(10)
        return {"log": state["log"] + "2"}

    builder = StateGraph(Steps)
    builder.add_node("first", first)
    builder.add_node("work", work)
    builder.add_edge(START, "first")
    builder.add_edge("first", "work")
    builder.add_edge("work", END)
    app = LangGraphApp(builder.compile(), "steps", store)
    runs = RunStore(database_for(store))
    one, two = (
        RunManager(store=runs, workers=2, busy_wait=0.0, keep=10, lease_ttl=TTL) for _ in range(2)
    )
    try:
        hung = one.start(
            RunRequest(
                graph=app,
                thread_id="t-1",
                input={"log": ""},
                config={"configurable": {"thread_id": "t-1"}},
                stream_modes=("values",),
                assistant_id="steps",
            )
        )
        assert entered.wait(10)
        # LangGraph saves the checkpoint that leads to `work` in the background while
        # `work` runs: the scenario is a runner that dies once it is on record
        deadline = time.monotonic() + 10
        while "work" not in runnable(store, "t-1"):
            assert time.monotonic() < deadline, "the checkpoint before `work` was never saved"
        expire(runs, hung.thread_id)  # its runner stops renewing

        RunWorker(two, store, {"steps": app}, poll=1.0).sweep()
        taken = two.local(hung.run_id)
        assert taken is not None
        assert taken.wait_blocking(10)

        stored = runs.get(hung.run_id)
        assert stored is not None
        assert (stored.status, stored.attempt) == ("success", 2)
        assert app.state("t-1").values == {"log": "12"}
        events = [type(e).__name__ for e in store.thread_events("t-1")]
        assert events.count("RunReclaimed") == 1
        assert len(calls) == 2  # the hung runner's, and the taker's: once more, not twice
        assert store.verify_chain("t-1").ok
    finally:
        gate.set()
        one.shutdown()
        two.shutdown()
        runs.close()
