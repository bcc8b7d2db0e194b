"""An edit of a thread's state while a run holds the thread: given a paused refund,
approved, whose `pay` node is still running, when someone edits the state over HTTP,
then the edit waits for the run to end and lands after it, or, past the busy-wait
timeout, is refused as thread-busy having recorded nothing. Either way the run ends
as it would have, and `pay` runs once: for a native graph and a real LangGraph graph.

Without this, the edit landed inside the run: a real LangGraph run's next save went on
from the checkpoint before the edit (the edit answered 200, was recorded, and was lost
to the thread's state), and a native run failed at its next commit after `pay` had run,
leaving `pay` to run again. Metadata set meanwhile (not the state) does not wait: the
run's step is recorded after it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as StillWaiting
from contextlib import ExitStack, contextmanager
from typing import Any, TypedDict

import pytest

from domain.record.application import Workflows
from domain.types import interrupt
from service.langgraph_app import LangGraphApp
from tests.api.http_harness import Server, postgres_schema_url, running_server
from tests.graphs import linear_graph
from tests.saver.langgraph_graphs import refund_builder

GRAPH = "slow-pay"
TIMEOUT = 30.0  # seconds a blocked node waits for the test, at most


class Gate:
    """Holds `pay` inside its node until the test lets it go; counts its runs."""

    def __init__(self) -> None:
        self.entered, self.released = threading.Event(), threading.Event()
        self.payments = 0

    def pay(self, state: Any) -> dict[str, Any]:
        self.entered.set()
        assert self.released.wait(TIMEOUT), "the test never let pay go"
        self.payments += 1
        return {"log": [f"paid {state['amount']}"]}


class NativeRefund(TypedDict):
    amount: int
    log: list[str]


def review(state: NativeRefund) -> dict[str, Any]:
    approved = interrupt({"question": "Approve the refund?", "amount": state["amount"]})
    return {"log": [*state.get("log", []), f"reviewed: {approved}"]}


def graphs_for(engine: str, gate: Gate) -> Any:
    def native_pay(state: NativeRefund) -> dict[str, Any]:
        paid = gate.pay(state)["log"]
        return {"log": [*state["log"], *paid]}

    def graphs(store: Workflows) -> dict[str, Any]:
        if engine == "native":
            native_pay.__name__ = "pay"
            return {GRAPH: linear_graph(store, NativeRefund, review, native_pay, name=GRAPH)}
        return {GRAPH: LangGraphApp(refund_builder(gate.pay).compile(), GRAPH, store)}

    return graphs


@pytest.fixture(params=["native", "langgraph"])
def engine(request):
    return request.param


@pytest.fixture(params=["sqlite", "postgres"])
def serve(request, tmp_path, engine):
    """Start a server of the slow-pay graph (the engine's) with these settings."""

    @contextmanager
    def serving(gate: Gate, **settings: Any) -> Iterator[Server]:
        extra = graphs_for(engine, gate)
        with ExitStack() as stack:
            if request.param == "sqlite":
                url = f"sqlite:///{tmp_path / 'h.db'}"
            else:
                url = stack.enter_context(postgres_schema_url())
            server = stack.enter_context(running_server(url, extra=extra, **settings))
            try:
                yield server
            finally:
                gate.released.set()  # a failed test leaves no node blocked at the shutdown

    return serving


def paying(server: Server, gate: Gate) -> str:
    """A refund of 150 approved, its `pay` node entered and held; the approval's run id."""
    with server.http("agent") as agent:
        agent.post("/threads", json={"thread_id": "t", "metadata": {"graph_id": GRAPH}})
        paused = agent.post(
            "/threads/t/runs/wait", json={"assistant_id": GRAPH, "input": {"amount": 150}}
        ).json()
    interrupt_id = paused["__interrupt__"][0]["id"]
    with server.http("reviewer") as reviewer:
        decided = reviewer.post(
            f"/approvals/{interrupt_id}/decision", json={"decision": "approve", "reason": "ok"}
        )
    assert decided.status_code == 200, decided.text
    assert gate.entered.wait(TIMEOUT)
    return str(decided.json()["run_id"])


def edit(server: Server) -> Any:
    """An admin's edit: one who may edit the thread whether it is at rest or in a run."""
    with server.http("admin") as admin:
        return admin.post(
            "/threads/t/state", json={"values": {"amount": 999}, "reason": "Wrong amount"}
        )


def names(server: Server) -> list[str]:
    return [type(event).__name__ for event in server.store.thread_events("t")]


def ended(server: Server, run_id: str) -> dict[str, Any]:
    with server.http("reviewer") as reviewer:
        reviewer.get(f"/threads/t/runs/{run_id}/join")
        run = reviewer.get(f"/threads/t/runs/{run_id}").json()
        state = reviewer.get("/threads/t/state").json()
    return {"status": run["status"], "values": state["values"], "next": state["next"]}


def test_an_edit_waits_for_the_run_that_holds_the_thread_and_lands_after_it(serve):
    gate = Gate()
    with serve(gate) as server, ThreadPoolExecutor(1) as pool:
        run_id = paying(server, gate)

        editing = pool.submit(edit, server)
        with pytest.raises(StillWaiting):  # it waits while `pay` runs (it took ms before)
            editing.result(timeout=1.0)
        assert "StateEdited" not in names(server)
        gate.released.set()
        edited = editing.result(timeout=TIMEOUT)

        assert edited.status_code == 200, edited.text
        assert ended(server, run_id) == {
            "status": "success",
            "values": {"amount": 999, "log": ["reviewed: True", "paid 150"]},
            "next": [],
        }
        record = names(server)
        assert record.index("StateEdited") > record.index("ThreadCompleted")
        assert gate.payments == 1


def test_an_edit_refused_as_the_thread_stays_busy_records_nothing_and_the_run_goes_on(serve):
    gate = Gate()
    with serve(gate, busy_wait_timeout=0.3) as server:
        run_id = paying(server, gate)

        refused = edit(server)

        assert refused.status_code == 409, refused.text
        problem = refused.json()
        assert problem["type"].endswith("/thread-busy")
        assert f"busy with run {run_id}" in problem["detail"]
        assert "StateEdited" not in names(server)
        gate.released.set()
        assert ended(server, run_id) == {
            "status": "success",
            "values": {"amount": 150, "log": ["reviewed: True", "paid 150"]},
            "next": [],
        }
        assert "StateEdited" not in names(server)
        assert gate.payments == 1
        assert edit(server).status_code == 200  # the thread at rest: the edit lands


def test_metadata_set_while_a_run_holds_the_thread_is_recorded_and_the_run_goes_on(serve):
    gate = Gate()
    with serve(gate) as server:
        run_id = paying(server, gate)

        with server.http("agent") as agent:
            patched = agent.patch("/threads/t", json={"metadata": {"ticket": "T-7"}})
        gate.released.set()

        assert patched.status_code == 200, patched.text
        assert ended(server, run_id) == {
            "status": "success",
            "values": {"amount": 150, "log": ["reviewed: True", "paid 150"]},
            "next": [],
        }
        assert "MetadataUpdated" in names(server)
        assert gate.payments == 1
