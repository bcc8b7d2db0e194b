"""Forks: a new thread from any version, starting with ThreadForked; the source untouched.

On every store kind: `fork_at_version` (what `holdpoint fork` runs), and the
LangGraph ways, `invoke(None, config_with_checkpoint_id)` and
`update_state(config_with_checkpoint_id, values)`. A fork taken inside a
pause raises the pending interrupt again on the new thread, where the
pending-approval read model shows it.
"""

from __future__ import annotations

import operator
from datetime import datetime
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.types import Command as LangGraphCommand

from domain.access.actor import local_actor
from domain.errors import ThreadExistsError, ThreadNotFoundError
from domain.graph import END, START, CompiledStateGraph, StateGraph
from domain.history.forks import LangGraphForkError, NothingToForkError, fork_at_version
from domain.history.time_travel import (
    ForkOrigin,
    VersionNotFoundError,
    fork_origin,
    state_at_version,
    versions,
)
from domain.record.application import Workflows
from domain.record.thread import WorkflowThread
from domain.record.thread_uuids import thread_uuid
from domain.types import Command, interrupt
from langgraph.checkpoint.holdpoint import HoldpointSaver
from projections.catalog import runner_for
from projections.pending_approvals import PendingApprovals
from tests.graphs import linear_graph
from tests.saver.langgraph_graphs import refund_builder

ALICE = {"id": "alice", "role": "agent"}
ADA = {"id": "ada", "role": "admin"}  # forks past an answer need who may decide it
REVIEWER = {"id": "rita", "role": "reviewer"}


class Approval(TypedDict):
    amount: float
    approved: Any
    log: Annotated[list, operator.add]


def approval_graph(
    store: Workflows, role: str | None = None, reason_required: bool = False
) -> CompiledStateGraph:
    """START -> ask -> pay -> END; `ask` pauses (for `role`, within an hour)."""

    def ask(state: Approval) -> dict[str, Any]:
        question = {"question": f"Pay {state['amount']}?"}
        approved = interrupt(
            question, required_role=role, deadline=3600, reason_required=reason_required
        )
        return {"approved": approved, "log": ["ask"]}

    def pay(state: Approval) -> dict[str, Any]:
        return {"log": [f"pay approved={state['approved']}"]}

    return linear_graph(store, Approval, ask, pay, name="approval")


class Answers(TypedDict):
    out: Annotated[list, operator.add]


def two_questions_graph(store: Workflows) -> CompiledStateGraph:
    """START -> two -> END; `two` asks "first?", then "second?"."""

    def two(state: Answers) -> dict[str, Any]:
        return {"out": [interrupt("first?"), interrupt("second?")]}

    builder = StateGraph(Answers)
    builder.add_node("two", two)
    builder.add_edge(START, "two")
    builder.add_edge("two", END)
    return builder.compile(checkpointer=store, name="twice")


def config(thread_id: str = "t1", **configurable: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id, **configurable}}


def stored(store: Workflows, thread_id: str) -> list[tuple[int, str, bytes]]:
    """The thread's events exactly as stored: version, topic and bytes."""
    return [
        (e.originator_version, e.topic, bytes(e.state))
        for e in store.recorder.select_events(thread_uuid(thread_id))
    ]


@pytest.fixture
def approved(store: Workflows) -> CompiledStateGraph:
    """Thread t1: asked about 250.0, approved, paid (versions 1 to 8; paused at 4)."""
    graph = approval_graph(store)
    graph.invoke({"amount": 250.0, "approved": None}, config(actor=ALICE))
    graph.invoke(Command(resume=True), config(actor=REVIEWER))
    return graph


# -- fork_at_version --------------------------------------------------------


def test_a_fork_starts_with_thread_forked_naming_source_version_and_hash(store, approved):
    # Given
    source_event = versions(store, "t1")[5]

    # When
    result = fork_at_version(store, "t1", 6, ADA, new_thread_id="t1-b")

    # Then
    [forked] = store.thread_events("t1-b")
    assert isinstance(forked, WorkflowThread.ThreadForked)
    assert (forked.source_thread_id, forked.source_version) == ("t1", 6)
    assert forked.source_hash == source_event.event_hash
    assert forked.actor == ADA
    assert forked.graph_id == "approval"
    assert (result.thread_id, result.source_hash, result.reraised) == (
        "t1-b",
        source_event.event_hash,
        [],
    )
    assert result.position == store.recorder.max_notification_id()


def test_a_forks_history_leads_back_to_the_source_version_it_was_forked_at(store, approved):
    # Given a fork of t1 at version 6, which then runs on
    fork_at_version(store, "t1", 6, ADA, new_thread_id="t1-b")
    approved.invoke(None, config("t1-b"))

    # When
    history = list(approved.get_state_history(config("t1-b")))

    # Then: its first checkpoint's parent is t1 at version 6, which reads as the fork began
    first = history[-1]
    assert first.metadata["source"] == "fork"
    parent = first.parent_config["configurable"]
    assert parent["thread_id"] == "t1"
    assert approved.get_state(first.parent_config).values == first.values
    assert [h.parent_config["configurable"]["thread_id"] for h in history] == ["t1-b"] * (
        len(history) - 1
    ) + ["t1"]


def test_a_fork_has_the_state_as_it_was_at_that_version(store, approved):
    # When
    fork_at_version(store, "t1", 6, ADA, new_thread_id="t1-b")

    # Then
    then, fork = state_at_version(store, "t1", 6), state_at_version(store, "t1-b", 1)
    assert fork.values == then.values == {"amount": 250.0, "approved": True, "log": ["ask"]}
    assert fork.next == then.next == ["pay"]
    assert fork.status == "running"


def test_forking_leaves_the_source_events_byte_for_byte_as_they_were(store, approved):
    # Given
    before = stored(store, "t1")

    # When
    fork_at_version(store, "t1", 4, ADA)
    fork_at_version(store, "t1", 7, ADA)

    # Then
    assert stored(store, "t1") == before


def test_a_fork_continues_on_its_own_and_the_source_does_not_move(store, approved):
    # Given a fork before `pay` ran
    fork_at_version(store, "t1", 6, ADA, new_thread_id="t1-b")
    before = stored(store, "t1")

    # When the fork is continued
    result = approved.invoke(None, config("t1-b"))

    # Then
    assert result["log"] == ["ask", "pay approved=True"]
    assert store.thread("t1-b").status == "idle"
    assert stored(store, "t1") == before


def test_a_fork_inside_a_pause_raises_the_interrupt_again_under_a_new_id(store, approved):
    # Given the interrupt that was pending at version 4
    [then] = state_at_version(store, "t1", 4).interrupts

    # When
    result = fork_at_version(store, "t1", 4, ADA, new_thread_id="t1-b")

    # Then
    forked, raised = store.thread_events("t1-b")
    assert isinstance(forked, WorkflowThread.ThreadForked)
    assert isinstance(raised, WorkflowThread.InterruptRaised)
    assert result.reraised == [raised.interrupt_id]
    assert raised.interrupt_id != then["id"]
    assert (raised.node, raised.index, raised.value) == ("ask", 0, then["value"])
    assert store.thread("t1-b").status == "interrupted"


def test_the_reraised_interrupt_is_a_new_pending_approval_of_the_fork(store, approved):
    # Given the read models, caught up on the answered thread
    runner = runner_for(store)
    runner.catch_up()
    assert PendingApprovals(runner.db).page().items == []

    # When it is forked at its pause
    result = fork_at_version(store, "t1", 4, ADA, new_thread_id="t1-b")
    runner.catch_up()

    # Then
    [row] = PendingApprovals(runner.db).page().items
    runner.close()
    assert (row.interrupt_id, row.thread_id, row.graph_id, row.node) == (
        result.reraised[0],
        "t1-b",
        "approval",
        "ask",
    )
    assert row.payload == {"question": "Pay 250.0?"}


def test_answering_the_reraised_interrupt_finishes_the_fork_with_that_answer(store, approved):
    # Given
    fork_at_version(store, "t1", 4, ADA, new_thread_id="t1-b")

    # When a reviewer rejects on the fork
    result = approved.invoke(Command(resume=False), config("t1-b", actor=REVIEWER))

    # Then
    assert result == {"amount": 250.0, "approved": False, "log": ["ask", "pay approved=False"]}
    assert state_at_version(store, "t1").values["approved"] is True


def test_the_reraised_interrupt_keeps_its_role_reason_rule_and_deadline_length(store):
    # Given a thread paused for role finance, a reason required, with an hour's deadline
    graph = approval_graph(store, role="finance", reason_required=True)
    graph.invoke({"amount": 9.0, "approved": None}, config())
    [source] = [
        e for e in store.thread_events("t1") if isinstance(e, WorkflowThread.InterruptRaised)
    ]

    # When
    fork_at_version(store, "t1", source.originator_version, ADA, new_thread_id="t1-b")

    # Then
    raised = store.thread_events("t1-b")[1]
    assert isinstance(raised, WorkflowThread.InterruptRaised)
    assert raised.required_role == "finance"
    assert raised.reason_required is True
    assert raised.on_expiry == source.on_expiry
    assert datetime.fromisoformat(raised.due_by) > datetime.fromisoformat(source.due_by)


def test_a_fork_between_two_questions_of_one_node_keeps_the_first_answer(store):
    # Given a node that asked "first?", got "a", and now asks "second?"
    graph = two_questions_graph(store)
    graph.invoke({"out": []}, config())
    graph.invoke(Command(resume="a"), config())
    head = store.thread("t1").version

    # When it is forked there, and the fork's question is answered "b"
    result = fork_at_version(store, "t1", head, ADA, new_thread_id="t1-b")
    [raised] = store.thread_events("t1-b")[1:]
    done = graph.invoke(Command(resume="b"), config("t1-b"))

    # Then the fork asked the second question, and the node got both answers in order
    assert (raised.value, raised.index) == ("second?", 1)
    assert result.reraised == [raised.interrupt_id]
    assert done == {"out": ["a", "b"]}


def test_default_fork_ids_are_thread_tilde_version_then_numbered(store, approved):
    # When
    first = fork_at_version(store, "t1", 6, ADA)
    second = fork_at_version(store, "t1", 6, ADA)

    # Then
    assert (first.thread_id, second.thread_id) == ("t1~6", "t1~6.2")


def test_a_fork_of_a_fork_names_its_own_source(store, approved):
    # Given
    fork_at_version(store, "t1", 6, ADA, new_thread_id="t1-b")

    # When
    fork_at_version(store, "t1-b", 1, ADA, new_thread_id="t1-c")

    # Then
    assert fork_origin(store, "t1") is None
    assert fork_origin(store, "t1-b").thread_id == "t1"
    origin = fork_origin(store, "t1-c")
    assert origin == ForkOrigin(
        thread_id="t1-b",
        version=1,
        event_hash=versions(store, "t1-b")[0].event_hash,
        forked_at=store.thread_events("t1-c")[0].timestamp,
    )
    assert state_at_version(store, "t1-c").values == state_at_version(store, "t1", 6).values


@pytest.mark.parametrize(
    ("version", "new_id", "error", "message"),
    [
        (0, None, VersionNotFoundError, "versions 1 to 8; there is no version 0"),
        (9, None, VersionNotFoundError, "there is no version 9"),
        (1, None, NothingToForkError, "has no state at version 1"),
        (6, "t1", ThreadExistsError, "'t1' already exists"),
    ],
)
def test_a_refused_fork_writes_nothing(store, approved, version, new_id, error, message):
    # Given
    head = store.recorder.max_notification_id()

    # When / Then
    with pytest.raises(error, match=message):
        fork_at_version(store, "t1", version, ADA, new_thread_id=new_id)
    assert store.recorder.max_notification_id() == head


def test_a_real_langgraph_graphs_paused_thread_is_not_forked_and_nothing_is_written(store):
    # Given a real LangGraph graph's thread, paused at its question (a fork carries its
    # checkpoints, so the fork's question would be the source's own, under its id)
    saver = HoldpointSaver(store, graph_id="refund-lg")
    refund_builder().compile(checkpointer=saver).invoke({"amount": 300}, config("lg"))
    head = store.recorder.max_notification_id()
    source = store.thread("lg")
    assert source is not None
    assert source.interrupts

    # When / Then
    with pytest.raises(LangGraphForkError, match="'lg' ran a real LangGraph graph and was "):
        fork_at_version(store, "lg", source.version, ADA)
    assert store.recorder.max_notification_id() == head


def test_a_real_langgraph_graphs_thread_is_forked_where_it_was_at_rest(store):
    # Given a real LangGraph graph's thread, approved and paid
    saver = HoldpointSaver(store, graph_id="refund-lg")
    graph = refund_builder().compile(checkpointer=saver)
    graph.invoke({"amount": 300}, config("lg"))
    graph.invoke(LangGraphCommand(resume=True), config("lg", decision="approve"))
    source = store.thread("lg")
    assert source is not None

    # When it is forked at its head
    fork = fork_at_version(store, "lg", source.version, ADA, new_thread_id="lg-copy")

    # Then the fork starts as the source stands, with LangGraph's checkpoints, and names
    # its source; no question is raised again
    forked = store.thread_events("lg-copy")
    assert [type(e).__name__ for e in forked] == ["ThreadForked"]
    assert (forked[0].engine, forked[0].source_thread_id) == ("langgraph", "lg")
    assert (fork.source_version, fork.reraised) == (source.version, [])
    copy = store.thread("lg-copy")
    assert copy is not None
    assert copy.values == source.values
    assert copy.heads == source.heads
    assert graph.get_state(config("lg-copy")).values == graph.get_state(config("lg")).values


def test_forking_an_unknown_thread_is_refused(store):
    with pytest.raises(ThreadNotFoundError):
        fork_at_version(store, "nope", 2, local_actor())


# -- the LangGraph ways ------------------------------------------------------------


def test_invoke_from_a_checkpoint_forks_with_thread_forked_and_leaves_the_source(store, approved):
    # Given the checkpoint at version 3 (before `ask` ran)
    checkpoint = versions(store, "t1")[2].checkpoint_id
    before = stored(store, "t1")

    # When
    result = approved.invoke(None, config(checkpoint_id=checkpoint, fork_thread_id="t1-b"))

    # Then the fork asked anew, and the source is as it was
    assert result["__interrupt__"][0].value == {"question": "Pay 250.0?"}
    first = store.thread_events("t1-b")[0]
    assert isinstance(first, WorkflowThread.ThreadForked)
    assert (first.source_thread_id, first.source_version) == ("t1", 3)
    assert stored(store, "t1") == before


def test_update_state_from_a_checkpoint_forks_and_leaves_the_source(store, approved):
    # Given the checkpoint at version 6 (before `pay` ran)
    checkpoint = versions(store, "t1")[5].checkpoint_id
    before = stored(store, "t1")

    # When
    new_config = approved.update_state(config(checkpoint_id=checkpoint), {"approved": False})

    # Then
    fork_id = new_config["configurable"]["thread_id"]
    assert fork_id == "t1~6"
    forked, edited = store.thread_events(fork_id)
    assert isinstance(forked, WorkflowThread.ThreadForked)
    assert isinstance(edited, WorkflowThread.StateEdited)
    assert forked.source_hash == versions(store, "t1")[5].event_hash
    assert stored(store, "t1") == before
    assert approved.invoke(None, config(fork_id))["log"] == ["ask", "pay approved=False"]


def test_a_fork_continued_to_its_end_records_thread_completed(store, approved):
    # Given a fork of t1 at version 6, before the last node ran
    fork_at_version(store, "t1", 6, ADA, new_thread_id="t1-b")

    # When it is continued to the end
    approved.invoke(None, config("t1-b"))

    # Then the fork's end is recorded once, as any run's is
    names = [type(e).__name__ for e in store.thread_events("t1-b")]
    assert names[-1] == "ThreadCompleted"
    assert names.count("ThreadCompleted") == 1


def test_a_real_langgraph_graphs_fork_at_an_earlier_rest_reads_its_checkpoints_to_there(store):
    # Given a real LangGraph graph's thread that paid two refunds, one after the other
    saver = HoldpointSaver(store, graph_id="refund-lg")
    graph = refund_builder().compile(checkpointer=saver)
    for amount in (300, 40):
        graph.invoke({"amount": amount}, config("lg"))
        graph.invoke(LangGraphCommand(resume=True), config("lg", decision="approve"))
    first_paid = next(
        e for e in store.thread_events("lg") if isinstance(e, WorkflowThread.ThreadCompleted)
    )

    # When it is forked where the first refund was paid
    fork_at_version(store, "lg", first_paid.originator_version, ADA, new_thread_id="lg-1st")

    # Then the fork reads the checkpoints up to there, and none of the second refund's
    def history(thread_id: str) -> list[str]:
        return [
            s.config["configurable"]["checkpoint_id"]
            for s in graph.get_state_history(config(thread_id))
        ]

    assert graph.get_state(config("lg-1st")).values["log"] == ["reviewed: True", "paid 300"]
    assert set(history("lg-1st")) < set(history("lg"))
    assert history("lg-1st") == [
        c
        for c in history("lg")
        if c <= graph.get_state(config("lg-1st")).config["configurable"]["checkpoint_id"]
    ]
