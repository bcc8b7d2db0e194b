"""The decision use case: a person answers an interrupt.

`decide(services, actor, decision, action)` is the one way an answer is recorded, for
the HTTP API and the browser UI alike. The answer is claimed before any node runs: the
thread records InterruptResumed (the decider, the decision, the reason, the digest of
the payload answered, the Idempotency-Key) in one commit, and of concurrent answers the
store lets exactly one commit. The interrupted node then runs again in the background,
as a run whose id the answer names. Who may answer, and how, are the domain's rules
(domain/oversight/hold_points.py), checked as the run begins; their refusals come back
as the domain's errors, already recorded by the domain. The refusals of this use case
(an interrupt never raised, or no longer open, a thread busy) are RefusalErrors that the
edge records (`refusal_of`). An approval short of the approvals an interrupt needs
(four eyes) records InterruptApproved and the interrupt stays pending.

The answer is read back from the recorded event, never kept aside: a retry with the
same Idempotency-Key finds the event in the thread and gets the same answer, after a
restart too, recording nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from domain.access.identity import Principal
from domain.assistants.assistant import ASSISTANT_KEYS
from domain.engine.runtime import REQUEST_KEY
from domain.errors import (
    ConcurrentUpdateError,
    NotInterruptedError,
    ThreadCancelledError,
    ThreadNotFoundError,
    UnknownInterruptError,
)
from domain.oversight.hold_points import NO_VALUE, answer_value
from domain.record.hashing import canonical_json, to_json
from domain.record.thread import WorkflowThread
from domain.types import Command
from service import assistant_catalog
from service.assistant_catalog import run_config
from service.errors import (
    IdempotencyKeyReusedError,
    InterruptNeverRaisedError,
    InterruptNotOpenError,
    RefusalError,
    RunInProgressError,
)
from service.runs import RunRequest
from service.services import Services
from service.wire import iso, thread_assistant_id

ATTEMPTS = 3  # a claim that lost to an unrelated write on the thread is tried again
LOST_RACE = (
    ConcurrentUpdateError,
    NotInterruptedError,
    UnknownInterruptError,
    ThreadCancelledError,
)
ANSWERS = (WorkflowThread.InterruptResumed, WorkflowThread.InterruptApproved)


@dataclass(frozen=True)
class Decision:
    """One answer as a person gives it; `resume` is NO_VALUE when it gives no value."""

    interrupt_id: str
    decision: str
    resume: Any = NO_VALUE
    reason: str | None = None
    payload_digest: str | None = None  # of the question the person was shown
    idempotency_key: str | None = None


@dataclass(frozen=True)
class Decided:
    """The recorded answer (InterruptResumed, or InterruptApproved short of the approvals
    needed), its thread, and the log position to wait for."""

    thread_id: str
    graph_id: str
    event: Any
    position: int | None


def refusal_of(error: Exception) -> str | None:
    """The reason an answer refused with `error` is recorded with at the edge; None for an
    error that is no such refusal (a hold point's own is recorded by the domain)."""
    if isinstance(error, RefusalError):
        return error.reason
    if isinstance(error, ConcurrentUpdateError | RunInProgressError):
        return "conflict"
    if isinstance(error, LOST_RACE):
        return "stale_interrupt"
    if isinstance(error, ThreadNotFoundError):
        return "unknown_interrupt"
    return None


def thread_of(services: Services, interrupt_id: str) -> str:
    """The thread of an interrupt, from the pending-approvals read model."""
    thread_id = services.read_models.thread_of_interrupt(interrupt_id)
    if thread_id is None:
        raise InterruptNeverRaisedError(interrupt_id)
    return thread_id


def decide(services: Services, actor: Principal, decision: Decision, action: str) -> Decided:
    """Record one answer, and start the node again unless more approvals are needed.

    `action` names the request on the refusals the domain records ("POST /approvals/…")."""
    interrupt_id = decision.interrupt_id
    thread_id = thread_of(services, interrupt_id)
    sent = NO_VALUE if decision.resume is NO_VALUE else to_json(decision.resume, "The resume value")
    for attempt in range(ATTEMPTS):
        thread = services.store.thread(thread_id)
        assert thread is not None, "the read models name only recorded threads"
        if decision.idempotency_key is not None:
            first = _first_answer(services, thread_id, actor, decision, sent)
            if first is not None:
                return Decided(thread_id, thread.graph_id, first, services.read_models.head())
        if interrupt_id not in thread.interrupts:
            raise _not_open(
                services, thread_id, interrupt_id, "stale_interrupt" if attempt == 0 else "conflict"
            )
        value = answer_value(
            decision.decision, thread.interrupts[interrupt_id], sent, decision.reason
        )
        resume = {interrupt_id: to_json(value, "The resume value")}
        graph = services.graph_of_thread(thread)
        assistant = assistant_catalog.of_thread(services.store, thread.metadata)
        config, context = ({}, None) if assistant is None else run_config(assistant, {}, None)
        configurable = {
            **(config.get("configurable") or {}),
            "thread_id": thread_id,
            "actor": actor.as_actor(),
            "decision": decision.decision,
            "reason": decision.reason,
            "idempotency_key": decision.idempotency_key,
            "payload_digest": decision.payload_digest,
            REQUEST_KEY: {"action": action, "target": interrupt_id},
        }
        run = RunRequest(
            graph=graph,
            thread_id=thread_id,
            input=Command(resume=resume),
            config={
                **config,
                "configurable": configurable,
                # the thread's assistant, as it stands: a decision never changes it
                "metadata": {
                    key: thread.metadata[key]
                    for key in ASSISTANT_KEYS
                    if thread.metadata.get(key) is not None
                },
            },
            stream_modes=(),
            assistant_id=thread_assistant_id(thread),
            metadata={"graph_id": graph.graph_id, "decision": decision.decision},
            context=context,
            wait=True,  # for a run that holds the thread: its end may decide the question
        )
        try:
            record = services.runs.start(run)
        except LOST_RACE:
            continue  # look again: someone answered first, or wrote something else
        for event in services.store.thread_events(thread_id, gt=thread.version):
            if isinstance(event, ANSWERS) and event.run_id == record.run_id:
                return Decided(thread_id, thread.graph_id, event, record.position)
        msg = f"The answer to interrupt {interrupt_id} was recorded but cannot be read back"
        raise RuntimeError(msg)
    raise _not_open(services, thread_id, interrupt_id, "conflict")


def decision_of(event: Any) -> str:
    return "approve" if isinstance(event, WorkflowThread.InterruptApproved) else event.decision


def _first_answer(
    services: Services, thread_id: str, actor: Principal, decision: Decision, sent: Any
) -> Any:
    """The answer first given with the decision's Idempotency-Key, if the thread recorded
    one; IdempotencyKeyReusedError if it was another answer. The resume value is compared
    only when the decision gave one."""
    key = decision.idempotency_key
    wanted = (decision.interrupt_id, decision.decision, sent, decision.reason, actor.id)
    for event in services.store.thread_events(thread_id):
        if isinstance(event, ANSWERS) and event.idempotency_key == key:
            resume = event.resume if sent is NO_VALUE else sent
            recorded = (
                event.interrupt_id,
                decision_of(event),
                canonical_json(event.resume),
                event.reason,
                (event.actor or {}).get("id"),
            )
            if recorded != (*wanted[:2], canonical_json(resume), *wanted[3:]):
                msg = (
                    f"Idempotency-Key {key!r} was already used at {iso(event.timestamp)} for "
                    f"another answer ({decision_of(event)} of interrupt {event.interrupt_id}); "
                    "use a new key for a new answer"
                )
                raise IdempotencyKeyReusedError(msg)
            return event
    return None


def _not_open(
    services: Services, thread_id: str, interrupt_id: str, reason: str
) -> InterruptNotOpenError:
    text, members = fate(services, thread_id, interrupt_id)
    return InterruptNotOpenError(f"{text}; nothing was recorded", reason, **members)


def fate(services: Services, thread_id: str, interrupt_id: str) -> tuple[str, dict[str, Any]]:
    """Why an interrupt is not open: a sentence, and what it says as members of a problem."""
    raised = False
    for event in services.store.thread_events(thread_id):
        if getattr(event, "interrupt_id", None) == interrupt_id:
            if isinstance(event, WorkflowThread.InterruptRaised):
                raised = True
            elif isinstance(event, WorkflowThread.InterruptResumed):
                actor = event.actor or {}
                by = {"id": actor.get("id"), "role": actor.get("role")}
                at = iso(event.timestamp)
                text = (
                    f"Interrupt {interrupt_id} was already decided ({event.decision}) by "
                    f"{by['id']} ({by['role'] or 'no role'}) at {at}"
                )
                return text, {"decided_by": by, "decided_at": at, "decision": event.decision}
            elif (
                isinstance(event, WorkflowThread.InterruptExpired)
                and event.rule.get("action") != "escalate"
            ):
                at = iso(event.timestamp)
                text = (
                    f"Interrupt {interrupt_id} expired at {at}; its deadline rule decided "
                    f"{event.rule.get('decision')}"
                )
                return text, {"decided_by": None, "decided_at": at, "decision": "expired"}
        elif isinstance(event, WorkflowThread.ThreadCancelled) and raised:
            actor = event.actor or {}
            at = iso(event.timestamp)
            text = (
                f"Thread {thread_id!r} was cancelled by {actor.get('id')} at {at}, "
                f"withdrawing interrupt {interrupt_id}"
            )
            return text, {"cancelled_by": actor.get("id"), "cancelled_at": at}
    if raised:
        return f"Interrupt {interrupt_id} is no longer pending: its node asked again", {}
    return f"No interrupt {interrupt_id} in thread {thread_id!r}", {}
