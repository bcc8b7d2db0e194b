"""Interrupts behave as in LangGraph (anchors/langgraph_semantics.md sections 1, 3, 4).

Ports of probes p1 (pause and resume), p3 (several interrupts in one node,
parallel interrupts, resume by id) and p8 (partial resume), run on every
store kind.
"""

from __future__ import annotations

import getpass
import operator
import re
from typing import Annotated, Any, TypedDict

import pytest

from domain.graph import START, StateGraph
from domain.graph.compiled import CompiledStateGraph
from domain.record.application import Workflows
from domain.record.store import open_store
from domain.record.thread import WorkflowThread
from domain.types import Command, Interrupt, interrupt
from tests.graphs import Refund, linear_graph, parallel_interrupts_graph, refund_graph

HEX32 = re.compile(r"^[0-9a-f]{32}$")


class Answers(TypedDict):
    answers: Annotated[list, operator.add]


def two_questions_graph(store: Workflows, runs: list[str]) -> CompiledStateGraph:
    def two(state: Answers) -> dict[str, Any]:
        runs.append("two:start")
        a = interrupt("first?")
        runs.append(f"two:a={a}")
        b = interrupt("second?")
        runs.append(f"two:b={b}")
        return {"answers": [a, b]}

    return linear_graph(store, Answers, two)


def config(thread_id: str, **configurable: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id, **configurable}}


# -- section 1: what invoke returns when a graph pauses ---------------------


def test_a_paused_run_returns_the_values_and_a_list_of_pending_interrupts(store):
    # Given
    graph = refund_graph(store, [])

    # When
    result = graph.invoke({"refund_amount": 250.0, "approved": False}, config("t1"))

    # Then
    assert result["refund_amount"] == 250.0
    assert result["approved"] is False
    assert isinstance(result["__interrupt__"], list)
    [pending] = result["__interrupt__"]
    assert isinstance(pending, Interrupt)
    assert pending.value == {"question": "Approve a $250.0 refund?"}
    assert pending.response_schema is None


def test_an_interrupt_id_is_32_lowercase_hex_characters(store):
    # Given
    graph = refund_graph(store, [])

    # When
    result = graph.invoke({"refund_amount": 250.0, "approved": False}, config("t1"))

    # Then
    assert HEX32.match(result["__interrupt__"][0].id)


def test_an_interrupt_id_is_the_same_in_the_result_the_snapshot_and_its_task(store):
    # Given
    graph = refund_graph(store, [])
    result = graph.invoke({"refund_amount": 250.0, "approved": False}, config("t1"))

    # When
    snapshot = graph.get_state(config("t1"))

    # Then
    assert snapshot.interrupts == tuple(result["__interrupt__"])
    assert snapshot.tasks[0].interrupts == snapshot.interrupts


def test_an_interrupt_id_stays_the_same_while_it_is_pending(store):
    # Given
    graph = refund_graph(store, [])
    first = graph.invoke({"refund_amount": 250.0, "approved": False}, config("t1"))

    # When: read again, and continued without an answer
    again = graph.get_state(config("t1")).interrupts
    continued = graph.invoke(None, config("t1"))

    # Then
    assert [i.id for i in again] == [first["__interrupt__"][0].id]
    assert continued["__interrupt__"] == first["__interrupt__"]


def test_an_interrupt_id_reads_the_same_through_a_new_store_object(sqlite_url):
    # Given
    with open_store(sqlite_url) as store:
        pending = refund_graph(store, []).invoke(
            {"refund_amount": 1.0, "approved": False}, config("t1")
        )["__interrupt__"]

    # When
    with open_store(sqlite_url) as reopened:
        snapshot = refund_graph(reopened, []).get_state(config("t1"))

    # Then
    assert list(snapshot.interrupts) == pending


def test_interrupt_ids_are_unique_within_a_thread(store):
    # Given
    graph = refund_graph(store, [])
    seen = []

    # When: three runs on one thread, each paused once
    for amount in (1.0, 2.0, 3.0):
        result = graph.invoke({"refund_amount": amount, "approved": False}, config("t1"))
        seen.append(result["__interrupt__"][0].id)
        graph.invoke(Command(resume=True), config("t1"))

    # Then
    assert len(set(seen)) == 3


def test_the_same_graph_pauses_with_different_ids_on_different_threads(store):
    # Given
    graph = refund_graph(store, [])

    # When
    a = graph.invoke({"refund_amount": 1.0, "approved": False}, config("a"))
    b = graph.invoke({"refund_amount": 1.0, "approved": False}, config("b"))

    # Then
    assert a["__interrupt__"][0].id != b["__interrupt__"][0].id


# -- section 3: resume re-runs the node from its first line -----------------


def test_resume_runs_the_interrupted_node_again_from_its_start(store):
    # Given
    calls: list[str] = []
    graph = refund_graph(store, calls)
    graph.invoke({"refund_amount": 250.0, "approved": False}, config("t1"))

    # When
    result = graph.invoke(Command(resume=True), config("t1"))

    # Then
    assert result == {"refund_amount": 250.0, "approved": True}
    assert calls == ["before-interrupt", "before-interrupt", "after-interrupt decision=True"]


def test_a_finished_resume_leaves_no_interrupt_pending(store):
    # Given
    graph = refund_graph(store, [])
    graph.invoke({"refund_amount": 250.0, "approved": False}, config("t1"))

    # When
    result = graph.invoke(Command(resume=True), config("t1"))

    # Then
    assert "__interrupt__" not in result
    snapshot = graph.get_state(config("t1"))
    assert snapshot.next == ()
    assert snapshot.interrupts == ()


@pytest.mark.parametrize("value", [False, 0, ""], ids=["False", "zero", "empty-string"])
def test_a_falsy_resume_value_is_delivered_to_interrupt(store, value):
    # Given
    calls: list[str] = []
    graph = refund_graph(store, calls)
    graph.invoke({"refund_amount": 250.0, "approved": True}, config("t1"))

    # When
    result = graph.invoke(Command(resume=value), config("t1"))

    # Then
    assert result["approved"] == value
    assert type(result["approved"]) is type(value)
    assert calls[-1] == f"after-interrupt decision={value!r}"


def test_a_dict_whose_keys_are_not_interrupt_ids_is_a_plain_resume_value(store):
    # Given
    graph = refund_graph(store, [])
    graph.invoke({"refund_amount": 250.0, "approved": False}, config("t1"))

    # When
    result = graph.invoke(Command(resume={"ok": True, "note": "fine"}), config("t1"))

    # Then
    assert result["approved"] == {"ok": True, "note": "fine"}


def test_a_resume_is_committed_before_the_node_runs_again(store):
    # Given: a node that looks at the store when it starts
    seen: list[list[str]] = []

    def ask(state: Refund) -> dict[str, Any]:
        seen.append([type(e).__name__ for e in store.thread_events("t1")])
        return {"approved": interrupt("ok?")}

    builder = StateGraph(Refund)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    graph = builder.compile(checkpointer=store)
    graph.invoke({"refund_amount": 1.0, "approved": False}, config("t1"))

    # When
    graph.invoke(Command(resume=True), config("t1"))

    # Then
    assert seen[-1][-1] == "InterruptResumed"


def test_new_input_is_committed_before_the_first_node_runs(store):
    # Given
    seen: list[list[str]] = []

    def first(state: Refund) -> dict[str, Any]:
        seen.append([type(e).__name__ for e in store.thread_events("t1")])
        return {}

    builder = StateGraph(Refund)
    builder.add_node("first", first)
    builder.add_edge(START, "first")
    graph = builder.compile(checkpointer=store)

    # When
    graph.invoke({"refund_amount": 1.0, "approved": False}, config("t1"))

    # Then
    assert seen == [["ThreadStarted", "InputReceived", "NodeCompleted"]]


def test_each_superstep_is_committed_before_the_next_starts(store):
    # Given
    seen: list[int] = []

    def count(state: Refund) -> dict[str, Any]:
        seen.append(len(store.thread_events("t1")))
        return {}

    builder = StateGraph(Refund)
    builder.add_node("a", count)
    builder.add_node("b", count)
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    graph = builder.compile(checkpointer=store)

    # When
    graph.invoke({"refund_amount": 1.0, "approved": False}, config("t1"))

    # Then: when b runs, a's NodeCompleted is already stored
    assert seen == [3, 4]


def test_a_resume_records_the_answer_with_decision_reason_actor_and_idempotency_key(store):
    # Given
    graph = refund_graph(store, [])
    pending = graph.invoke({"refund_amount": 250.0, "approved": False}, config("t1"))
    interrupt_id = pending["__interrupt__"][0].id

    # When
    graph.invoke(
        Command(resume=False),
        config(
            "t1",
            actor={"id": "bob", "role": "reviewer"},
            decision="reject",
            reason="over budget",
            idempotency_key="k-1",
        ),
    )

    # Then
    [resumed] = [
        e for e in store.thread_events("t1") if isinstance(e, WorkflowThread.InterruptResumed)
    ]
    assert resumed.interrupt_id == interrupt_id
    assert resumed.resume is False
    assert resumed.decision == "reject"
    assert resumed.reason == "over budget"
    assert resumed.idempotency_key == "k-1"
    assert resumed.actor["id"] == "bob"
    assert resumed.actor["role"] == "reviewer"


def test_a_resume_without_an_actor_records_the_os_user_unauthenticated(store):
    # Given
    graph = refund_graph(store, [])
    graph.invoke({"refund_amount": 250.0, "approved": False}, config("t1"))

    # When
    graph.invoke(Command(resume=True), config("t1"))

    # Then: the decision defaults to "respond"
    [resumed] = [
        e for e in store.thread_events("t1") if isinstance(e, WorkflowThread.InterruptResumed)
    ]
    assert resumed.decision == "respond"
    assert resumed.reason is None
    assert resumed.idempotency_key is None
    assert resumed.actor["id"] == getpass.getuser()
    assert resumed.actor["authenticated"] is False


# -- section 4: several interrupts in one node, matched by order -------------


def test_several_interrupts_in_one_node_are_answered_in_order(store):
    # Given
    runs: list[str] = []
    graph = two_questions_graph(store, runs)

    # When
    first = graph.invoke({"answers": []}, config("m1"))
    second = graph.invoke(Command(resume="A"), config("m1"))
    final = graph.invoke(Command(resume="B"), config("m1"))

    # Then
    assert first == {
        "answers": [],
        "__interrupt__": [Interrupt("first?", first["__interrupt__"][0].id)],
    }
    assert [i.value for i in second["__interrupt__"]] == ["second?"]
    assert final == {"answers": ["A", "B"]}
    assert runs == [
        "two:start",
        "two:start",
        "two:a=A",
        "two:start",
        "two:a=A",
        "two:b=B",
    ]


def test_each_interrupt_in_one_node_has_its_own_id(store):
    # Given
    graph = two_questions_graph(store, [])
    first = graph.invoke({"answers": []}, config("m1"))

    # When
    second = graph.invoke(Command(resume="A"), config("m1"))

    # Then
    assert first["__interrupt__"][0].id != second["__interrupt__"][0].id


def test_while_the_second_interrupt_waits_only_it_is_pending(store):
    # Given
    graph = two_questions_graph(store, [])
    graph.invoke({"answers": []}, config("m1"))
    second = graph.invoke(Command(resume="A"), config("m1"))

    # When
    snapshot = graph.get_state(config("m1"))

    # Then
    assert snapshot.interrupts == tuple(second["__interrupt__"])
    assert snapshot.next == ("two",)


def test_a_node_with_two_interrupts_makes_the_same_checkpoints_as_langgraph(store):
    # Given
    graph = two_questions_graph(store, [])
    graph.invoke({"answers": []}, config("m1"))
    graph.invoke(Command(resume="A"), config("m1"))

    # When
    graph.invoke(Command(resume="B"), config("m1"))

    # Then
    history = graph.get_state_history(config("m1"))
    assert [(s.metadata["source"], s.metadata["step"]) for s in history] == [
        ("loop", 1),
        ("loop", 0),
        ("input", -1),
    ]


def test_interrupts_in_one_node_can_be_answered_by_id(store):
    # Given
    graph = two_questions_graph(store, [])
    result = graph.invoke({"answers": []}, config("m3"))

    # When
    result = graph.invoke(Command(resume={result["__interrupt__"][0].id: "X"}), config("m3"))
    result = graph.invoke(Command(resume={result["__interrupt__"][0].id: "Y"}), config("m3"))

    # Then
    assert result == {"answers": ["X", "Y"]}


# -- section 4: parallel branches ---------------------------------------


def test_parallel_interrupts_are_all_returned_and_pending(store):
    # Given
    graph = parallel_interrupts_graph(store, [], join=True)

    # When
    result = graph.invoke({"out": []}, config("p1"))

    # Then
    assert sorted(i.value for i in result["__interrupt__"]) == ["ask left", "ask right"]
    snapshot = graph.get_state(config("p1"))
    assert snapshot.next == ("left", "right")
    assert len(snapshot.tasks) == 2
    assert sorted(i.value for i in snapshot.interrupts) == ["ask left", "ask right"]
    assert {i.id for i in snapshot.interrupts} == {i.id for i in result["__interrupt__"]}


def test_parallel_interrupts_resumed_together_by_id_map_run_the_join(store):
    # Given
    graph = parallel_interrupts_graph(store, [], join=True)
    result = graph.invoke({"out": []}, config("p3"))

    # When
    final = graph.invoke(
        Command(resume={i.id: i.value.upper() for i in result["__interrupt__"]}), config("p3")
    )

    # Then
    assert final == {"out": ["left=ASK LEFT", "right=ASK RIGHT", "join"]}


def test_a_partial_resume_finishes_the_answered_branch_and_keeps_the_other_pending(store):
    # Given
    runs: list[str] = []
    graph = parallel_interrupts_graph(store, runs, join=False)
    result = graph.invoke({"out": []}, config("pp"))
    ids = {i.value: i.id for i in result["__interrupt__"]}
    runs.clear()

    # When
    partial = graph.invoke(Command(resume={ids["ask left"]: "L"}), config("pp"))

    # Then: unlike LangGraph, the unanswered branch is not run again
    assert runs == ["left"]
    assert partial == {
        "out": ["left=L"],
        "__interrupt__": [Interrupt("ask right", ids["ask right"])],
    }
    snapshot = graph.get_state(config("pp"))
    assert snapshot.values == {"out": ["left=L"]}
    assert snapshot.next == ("right",)
    assert [i.value for i in snapshot.interrupts] == ["ask right"]


def test_a_partial_resume_does_not_close_the_superstep(store):
    # Given
    graph = parallel_interrupts_graph(store, [], join=False)
    result = graph.invoke({"out": []}, config("pp"))
    ids = {i.value: i.id for i in result["__interrupt__"]}

    # When
    graph.invoke(Command(resume={ids["ask left"]: "L"}), config("pp"))

    # Then
    history = graph.get_state_history(config("pp"))
    assert [(s.metadata["source"], s.metadata["step"]) for s in history] == [
        ("loop", 0),
        ("input", -1),
    ]


def test_continuing_while_a_branch_is_pending_keeps_its_interrupt(store):
    # Given
    graph = parallel_interrupts_graph(store, [], join=False)
    result = graph.invoke({"out": []}, config("pp"))
    ids = {i.value: i.id for i in result["__interrupt__"]}
    graph.invoke(Command(resume={ids["ask left"]: "L"}), config("pp"))

    # When
    continued = graph.invoke(None, config("pp"))

    # Then
    assert continued == {
        "out": ["left=L"],
        "__interrupt__": [Interrupt("ask right", ids["ask right"])],
    }


def test_answering_the_rest_after_a_partial_resume_completes_the_step_and_the_join(store):
    # Given
    runs: list[str] = []
    graph = parallel_interrupts_graph(store, runs, join=True)
    result = graph.invoke({"out": []}, config("p2"))
    ids = {i.value: i.id for i in result["__interrupt__"]}
    graph.invoke(Command(resume={ids["ask left"]: "L"}), config("p2"))
    runs.clear()

    # When
    final = graph.invoke(Command(resume={ids["ask right"]: "R"}), config("p2"))

    # Then
    assert final == {"out": ["left=L", "right=R", "join"]}
    assert runs == ["right"]
