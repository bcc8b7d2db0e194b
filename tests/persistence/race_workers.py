"""The child side of the concurrent-writer tests.

A worker is a long-lived process started with the "spawn" context: it imports
this module afresh, opens its own store from the URL it is given, and runs
one race per job it reads from its inbox, meeting the other worker at the
round's start barrier right before its `graph.invoke(...)`. It reports what
it saw (success, or the error's type and message) on the shared outbox. Only
Holdpoint's public API is used, as an application would use it.

A barrier before `invoke` starts both calls together, but it cannot make them
overlap: one process may read, commit and finish before the other has read
the thread at all (on SQLite, a fast store, most rounds go that way). A
"gated" round makes the overlap certain: each worker's first call to the
store's `record` (made after its run has read the thread, before anything is
committed) waits at a second barrier, the commit gate, so that both runs hold
the same version of the thread when they commit.
"""

from __future__ import annotations

import traceback
from multiprocessing.synchronize import Barrier
from typing import Any, TypedDict

from domain.errors import HoldpointError
from domain.graph import CompiledStateGraph
from domain.record.application import Workflows
from domain.record.store import open_store
from domain.types import Command, interrupt
from tests.graphs import linear_graph

BARRIER_TIMEOUT = 30.0
WORKER = "parent"  # the worker's name, in a worker process


class RefundState(TypedDict, total=False):
    amount: float
    log: str
    decision: str
    outcome: str


def review(state: RefundState) -> dict[str, Any]:
    """Pauses for a human; after the answer comes back, logs one line per run."""
    answer = interrupt({"question": f"Approve a ${state['amount']} refund?"})
    with open(state["log"], "a", encoding="utf-8") as log:
        log.write(f"review ran after the interrupt returned {answer!r}\n")
    return {"decision": str(answer)}


def settle(state: RefundState) -> dict[str, Any]:
    return {"outcome": f"refund of ${state['amount']} settled: {state['decision']}"}


def refund_graph(store: Workflows) -> CompiledStateGraph:
    """START -> review -> settle -> END."""
    return linear_graph(store, RefundState, review, settle, name="race-refund")


class StepState(TypedDict, total=False):
    log: str
    trail: str
    finished_by: str


def prepare(state: StepState) -> dict[str, Any]:
    return {"trail": "prepared"}


def finish(state: StepState) -> dict[str, Any]:
    """The step both workers race to commit; logs one line per run."""
    with open(state["log"], "a", encoding="utf-8") as log:
        log.write("finish ran\n")
    return {"trail": state["trail"] + ", finished", "finished_by": WORKER}


def step_graph(store: Workflows) -> CompiledStateGraph:
    """START -> prepare -> finish -> END."""
    return linear_graph(store, StepState, prepare, finish, name="race-step")


GRAPHS = {"resume": refund_graph, "step": step_graph}


def config_for(thread_id: str, actor: dict[str, Any], **extra: Any) -> dict[str, Any]:
    configurable = {"thread_id": thread_id, "actor": actor}
    return {"configurable": configurable, **extra}


def worker_actor(name: str) -> dict[str, Any]:
    return {"id": f"reviewer-{name}", "role": "reviewer"}


def resume_value(name: str) -> str:
    return f"approved by {name}"


def gate_first_commit(store: Workflows, gate: Barrier) -> None:
    """Make the store's next `record` call wait at `gate` first (once)."""
    record = store.record

    def gated(thread: Any, **how: Any) -> int | None:
        ungate(store)
        gate.wait(BARRIER_TIMEOUT)
        return record(thread, **how)

    store.record = gated  # type: ignore[method-assign]


def ungate(store: Workflows) -> None:
    """Back to the store's own `record` method."""
    vars(store).pop("record", None)


def race_once(store: Workflows, name: str, job: dict[str, Any], start: Barrier) -> Any:
    """Wait for the other worker, then make this worker's one call."""
    graph = GRAPHS[job["race"]](store)
    if job["race"] == "resume":
        config = config_for(job["thread_id"], worker_actor(name))
        config["configurable"]["decision"] = "respond"  # its value names the worker
        start.wait(BARRIER_TIMEOUT)
        return graph.invoke(Command(resume=resume_value(name)), config)
    config = config_for(job["thread_id"], worker_actor(name), recursion_limit=50)
    start.wait(BARRIER_TIMEOUT)
    return graph.invoke(None, config)


def serve(name: str, barriers: list[tuple[Barrier, Barrier]], inbox: Any, outbox: Any) -> None:
    """A worker's life: open the store once per URL, race once per job, report.

    `barriers[round]` is that round's (start barrier, commit gate). A worker
    that fails before a barrier breaks both, so the other one is not left
    waiting: it reports a BrokenBarrierError at once.
    """
    global WORKER  # noqa: PLW0603 - the worker's name, for the nodes to record
    WORKER = name
    stores: dict[str, Workflows] = {}
    try:
        while (job := inbox.get()) is not None:
            report: dict[str, Any] = {"worker": name, "round": job["round"]}
            start, gate = barriers[job["round"]]
            try:
                store = stores.get(job["url"])
                if store is None:
                    store = stores[job["url"]] = open_store(job["url"])
                if job["gated"]:
                    gate_first_commit(store, gate)
                report["result"] = race_once(store, name, job, start)
                report["outcome"] = "ok"
            except HoldpointError as error:
                report.update(outcome="error", error=type(error).__name__, message=str(error))
            except Exception as error:  # reported, not raised: the parent asserts
                report.update(
                    outcome="crash", error=type(error).__name__, message=traceback.format_exc()
                )
            finally:
                for store in stores.values():
                    ungate(store)  # in case the run failed before its first commit
            if report["outcome"] != "ok":
                start.abort()
                gate.abort()
            outbox.put(report)
    finally:
        for store in stores.values():
            store.close()


def open_at_once(urls: list[str], barriers: list[Barrier], outbox: Any) -> None:
    """For each URL in turn: meet the others at its barrier, open the store, report."""
    for url, barrier in zip(urls, barriers, strict=True):
        barrier.wait(BARRIER_TIMEOUT)
        try:
            open_store(url).close()
        except HoldpointError as error:
            outbox.put(f"{type(error).__name__}: {error}")
        else:
            outbox.put("ok")
