"""A node's task id: the same on every run of the node in its step (an idempotency key
for its side effects), read through `get_config()`, and recorded on its NodeCompleted."""

from __future__ import annotations

from typing import TypedDict

import pytest

from domain.config import get_config
from domain.record.thread import WorkflowThread
from tests.graphs import linear_graph


class Payment(TypedDict, total=False):
    amount: float
    paid: bool


def test_a_node_run_again_after_a_failure_gets_the_same_task_id(store):
    seen: list[str] = []

    def pay(state: Payment) -> Payment:
        seen.append(get_config()["metadata"]["holdpoint_task_id"])
        if len(seen) == 1:
            raise ConnectionError("the provider timed out")
        return {"paid": True}

    graph = linear_graph(store, Payment, pay)
    config = {"configurable": {"thread_id": "t-pay"}}
    with pytest.raises(ConnectionError):
        graph.invoke({"amount": 10.0}, config)

    assert graph.invoke(None, config)["paid"] is True

    assert len(seen) == 2
    assert seen[0] == seen[1]
    [completed] = [
        e
        for e in store.thread_events("t-pay")
        if isinstance(e, WorkflowThread.NodeCompleted) and e.node == "pay"
    ]
    assert completed.task_id == seen[0]


def test_each_step_of_a_thread_gives_its_node_a_new_task_id(store):
    seen: list[str] = []

    def pay(state: Payment) -> Payment:
        seen.append(get_config()["metadata"]["holdpoint_task_id"])
        return {"paid": True}

    graph = linear_graph(store, Payment, pay)
    config = {"configurable": {"thread_id": "t-twice"}}
    graph.invoke({"amount": 1.0}, config)
    graph.invoke({"amount": 2.0}, config)

    assert len(set(seen)) == 2


def test_get_config_outside_a_node_says_so():
    with pytest.raises(RuntimeError, match="outside a running graph node"):
        get_config()
