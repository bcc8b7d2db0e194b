"""Histories that put the hold points' rules to work, for the read-model tests.

`record_hold_points` runs a real graph through the Python API with named actors
(an agent starts each thread, reviewers decide), one thread per story: four
eyes approved, four eyes rejected after one approval, a question asked again
because the state was edited under its answer, an edit `as_node` that decides
the flow, and the attempts the rules refuse on the way. What the domain never
records, a node run past an answer it did not apply, and events recorded
before hold points were, are written as events directly (`record_unapplied`,
`record_legacy`): the read model's checks exist to catch those.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypedDict

from domain.errors import (
    HoldPointBypassError,
    QuestionChangedError,
    RepeatedApprovalError,
    WrongRoleError,
)
from domain.graph import END, START, CompiledStateGraph, StateGraph
from domain.oversight.hold_points import question_digest
from domain.record.application import Workflows
from domain.record.thread import WorkflowThread
from domain.types import Command, interrupt

AGENT = {"id": "agent-7", "role": "agent"}
RITA = {"id": "rita", "role": "reviewer"}
SAM = {"id": "sam", "role": "reviewer"}
TESS = {"id": "tess", "role": "reviewer"}
FOUR_EYES_ABOVE = 1000.0


class Refund(TypedDict):
    amount: float
    decision: Any
    paid: bool


def question(amount: float) -> dict[str, Any]:
    return {"refund": amount}


def refund_graph(store: Workflows, *, name: str = "refund") -> CompiledStateGraph:
    """START -> approve -> pay -> END; `approve` asks about the amount, four eyes above
    FOUR_EYES_ABOVE."""

    def approve(state: Refund) -> dict[str, Any]:
        amount = state["amount"]
        approvals = 2 if amount > FOUR_EYES_ABOVE else None
        return {"decision": interrupt(question(amount), approvals=approvals)}

    builder = StateGraph(Refund)
    builder.add_node("approve", approve)
    builder.add_node("pay", lambda state: {"paid": state["decision"] is True})
    builder.add_edge(START, "approve")
    builder.add_edge("approve", "pay")
    builder.add_edge("pay", END)
    return builder.compile(checkpointer=store, name=name)


def config(thread_id: str, actor: dict[str, Any], **configurable: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id, "actor": actor, **configurable}}


def start(graph: CompiledStateGraph, thread_id: str, amount: float) -> str:
    """The agent starts `thread_id`; the id of the interrupt it pauses at."""
    result = graph.invoke(
        {"amount": amount, "decision": None, "paid": False}, config(thread_id, AGENT)
    )
    [pending] = result["__interrupt__"]
    return str(pending.id)


def decide(
    graph: CompiledStateGraph,
    thread_id: str,
    who: dict[str, Any],
    decision: str = "approve",
    **configurable: Any,
) -> dict[str, Any]:
    resume = {"approve": True, "reject": False}[decision]
    cfg = config(thread_id, who, decision=decision, reason=f"{decision} by {who['id']}")
    cfg["configurable"] |= configurable
    return graph.invoke(Command(resume=resume), cfg)


def refused(attempt: Callable[[], object], error: type[Exception]) -> None:
    """Run `attempt`, which the rules must refuse with `error` (recording the refusal)."""
    try:
        attempt()
    except error:
        return
    msg = f"expected {error.__name__}"
    raise AssertionError(msg)


@dataclass(frozen=True)
class HoldPointIds:
    """The interrupts of `record_hold_points`' stories."""

    four_eyes: str  # approved by rita and sam (rita's second approval refused: four_eyes)
    rejected: str  # approved by rita, then rejected by sam
    asked: str  # answered after rita edited the amount: its answer did not apply
    reasking: str  # asked in its place, then approved (sam's decision on the old payload
    # refused first: question_changed)
    edited: str  # still open: tess edited the state as_node (agent's two tries refused)


def record_hold_points(
    store: Workflows, prefix: str = "", graph_name: str = "refund"
) -> HoldPointIds:
    graph = refund_graph(store, name=graph_name)
    four_eyes = start(graph, f"{prefix}four-eyes", 5000.0)
    decide(graph, f"{prefix}four-eyes", RITA)
    refused(lambda: decide(graph, f"{prefix}four-eyes", RITA), RepeatedApprovalError)
    decide(graph, f"{prefix}four-eyes", SAM)

    rejected = start(graph, f"{prefix}rejected", 7000.0)
    decide(graph, f"{prefix}rejected", RITA)
    decide(graph, f"{prefix}rejected", SAM, "reject")

    thread = f"{prefix}reasked"
    asked = start(graph, thread, 50.0)
    graph.update_state(config(thread, RITA), {"amount": 40.0})  # rita may: she may decide it
    [again] = decide(graph, thread, SAM)["__interrupt__"]  # the node asks about 40 now
    old = question_digest(question(50.0))
    refused(lambda: decide(graph, thread, SAM, payload_digest=old), QuestionChangedError)
    decide(graph, thread, SAM)

    thread = f"{prefix}edited"
    edited = start(graph, thread, 60.0)
    refused(
        lambda: graph.update_state(config(thread, AGENT), {"amount": 1.0}), HoldPointBypassError
    )
    as_node = config(thread, AGENT, reason="skip it")
    refused(
        lambda: graph.update_state(as_node, {"decision": True}, "approve"), HoldPointBypassError
    )
    refused(lambda: decide(graph, thread, AGENT), WrongRoleError)  # not a hold-point refusal
    graph.update_state(
        config(thread, TESS, reason="approved by phone"), {"decision": True}, "approve"
    )
    return HoldPointIds(four_eyes, rejected, asked, str(again.id), edited)


def _started(thread_id: str, graph_id: str = "refund") -> WorkflowThread:
    thread = WorkflowThread.start(
        thread_id=thread_id,
        graph_id=graph_id,
        graph_digest="test",
        channels={"amount": None, "decision": None, "paid": None},
        initial={},
        waiting_edges={},
        metadata={},
        actor=AGENT,
    )
    thread._record(
        WorkflowThread.InputReceived, run_id="run-1", input={"amount": 10.0}, actor=AGENT
    )
    return thread


def _completed(thread: WorkflowThread, node: str, applied: Any) -> None:
    thread._record(
        WorkflowThread.NodeCompleted,
        step=thread.step + 1,
        node=node,
        task_id=thread.task_id(node),
        update={"decision": True},
        routes=["pay"],
        duration_ms=1.0,
        applied=applied,
    )


def record_unapplied(store: Workflows, thread_id: str, *, answered: bool = True) -> str:
    """A thread whose node `approve` completes without applying its interrupt's answer
    (`applied` None), after the answer (or, `answered=False`, with the interrupt open):
    the regression the oversight log's check exists to catch. Its interrupt's id."""
    thread, interrupt_id = _asked(thread_id, answered=answered)
    store.save(thread)
    return interrupt_id


def _asked(thread_id: str, *, answered: bool) -> tuple[WorkflowThread, str]:
    """A thread whose `approve` asked about 10.0 (and was answered, if `answered`), then
    completed with `applied` None. The thread, and its interrupt's id."""
    thread = _started(thread_id)
    interrupt_id = thread.raise_interrupt(step=1, node="approve", index=0, value=question(10.0))
    if answered:
        thread.answer(
            interrupt_id,
            resume=True,
            decision="approve",
            reason=None,
            actor=RITA,
            idempotency_key=None,
            run_id="run-1",
            separation_of_duties=True,
        )
    _completed(thread, "approve", None)
    return thread, interrupt_id


# The fields hold points added to the events: absent from the ones recorded before.
LEGACY_FIELDS = {
    WorkflowThread.InterruptRaised: ("digest", "approvals", "decision_values", "reasked"),
    WorkflowThread.InterruptResumed: ("digest", "separation_of_duties"),
    WorkflowThread.NodeCompleted: ("applied",),
}


def record_legacy(store: Workflows, thread_id: str) -> str:
    """A thread asked, answered and run on before hold points were: its events lack the
    fields they added (none is even None). Its interrupt's id."""
    thread, interrupt_id = _asked(thread_id, answered=True)
    events = thread.collect_events()
    for event in events:
        for name in LEGACY_FIELDS.get(type(event), ()):
            del event.__dict__[name]
    store.events.put(events)
    return interrupt_id
