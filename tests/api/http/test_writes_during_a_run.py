"""Writes to a thread while a run holds it: given a paused refund (review -> pay ->
notify), approved, whose `pay` node is still running, when someone writes to the thread
over HTTP, then the run and the record stay true, for a native graph and a real
LangGraph graph:

- an edit of the state waits for the run to end and lands after it, or, past the
  busy-wait timeout, is refused as thread-busy having recorded nothing; `pay` runs once.
  (Before, the edit landed inside the run: a real LangGraph run's next save went on from
  the checkpoint before it, losing it, and a native run failed at its next commit after
  `pay` had run, leaving it to run again);
- metadata set meanwhile does not wait: the run's step is recorded after it;
- the stop button (a cancel) stops the run: `pay`, which was running, is on record after
  the stop, `notify` never runs, and the run ends as interrupted. (Before, a real
  LangGraph run went on to `notify` and the thread completed after its cancellation; a
  native run failed with `pay` run and not on record.)
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as StillWaiting
from contextlib import ExitStack, contextmanager
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.graph import START
from langgraph.graph import StateGraph as LangGraphStateGraph
from langgraph.types import interrupt as langgraph_interrupt

from domain.record.application import Workflows
from domain.types import interrupt
from service.langgraph_app import LangGraphApp
from tests.api.http_harness import Server, postgres_schema_url, running_server
from tests.graphs import linear_graph

GRAPH = "slow-pay"
TIMEOUT = 30.0  # seconds a blocked node waits for the test, at most


class Gate:
    """Holds `pay` inside its node until the test lets it go; counts its runs."""

    def __init__(self) -> None:
        self.entered, self.released = threading.Event(), threading.Event()
        self.payments = self.notified = 0

    def pay(self, state: Any) -> dict[str, Any]:
        self.entered.set()
        assert self.released.wait(TIMEOUT), "the test never let pay go"
        self.payments += 1
        return {"log": [f"paid {state['amount']}"]}


class Refund(TypedDict):
    amount: int
    log: Annotated[list[str], operator.add]


def reviewing(ask: Callable[[Any], Any]) -> Callable[[Refund], dict[str, Any]]:
    """The review node, asking with the engine's `interrupt`."""

    def review(state: Refund) -> dict[str, Any]:
        approved = ask({"question": "Approve the refund?", "amount": state["amount"]})
        return {"log": [f"reviewed: {approved}"]}

    return review


def graphs_for(engine: str, gate: Gate) -> Any:
    """review -> pay -> notify, `pay` held by `gate`, on the engine's StateGraph."""

    def pay(state: Refund) -> dict[str, Any]:
        return gate.pay(state)

    def notify(state: Refund) -> dict[str, Any]:
        gate.notified += 1
        return {"log": ["notified"]}

    def graphs(store: Workflows) -> dict[str, Any]:
        if engine == "native":
            review = reviewing(interrupt)
            return {GRAPH: linear_graph(store, Refund, review, pay, notify, name=GRAPH)}
        builder = LangGraphStateGraph(Refund)
        for node in (reviewing(langgraph_interrupt), pay, notify):
            builder.add_node(node.__name__, node)
        builder.add_edge(START, "review")
        builder.add_edge("review", "pay")
        builder.add_edge("pay", "notify")
        return {GRAPH: LangGraphApp(builder.compile(), GRAPH, store)}

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
            "values": {"amount": 999, "log": ["reviewed: True", "paid 150", "notified"]},
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
            "values": {"amount": 150, "log": ["reviewed: True", "paid 150", "notified"]},
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
            "values": {"amount": 150, "log": ["reviewed: True", "paid 150", "notified"]},
            "next": [],
        }
        assert "MetadataUpdated" in names(server)
        assert gate.payments == 1


def test_the_stop_button_stops_the_run_under_way_and_the_record_says_what_ran(serve):
    gate = Gate()
    with serve(gate) as server:
        run_id = paying(server, gate)

        with server.http("admin") as admin:
            stopped = admin.post("/threads/t/cancel", json={"reason": "Wrong customer"})
        gate.released.set()

        assert stopped.status_code == 200, stopped.text
        run = ended(server, run_id)
        assert (run["status"], run["values"]) == (
            "interrupted",
            {"amount": 150, "log": ["reviewed: True", "paid 150"]},
        )
        assert (gate.payments, gate.notified) == (1, 0)
        record = [
            (type(e).__name__, getattr(e, "node", None)) for e in server.store.thread_events("t")
        ]
        stop = record.index(("ThreadCancelled", None))
        assert ("NodeCompleted", "pay") in record[stop:]  # it ran: the record says so
        assert ("NodeCompleted", "notify") not in record
        assert ("ThreadCompleted", None) not in record
        with server.http("admin") as admin:
            assert admin.get("/threads/t").json()["status"] == "cancelled"
            again = admin.post("/threads/t/runs/wait", json={"assistant_id": GRAPH, "input": None})
        assert again.status_code == 409, again.text
        assert gate.notified == 0
