"""`POST /approvals/{interrupt_id}/decision`: a human answers an interrupt.

The answer is claimed before any node runs: the thread records
InterruptResumed (with the decider from the API key, the decision, the
reason and the Idempotency-Key) in one commit, and of concurrent answers the
store lets exactly one commit. The interrupted node then runs again in the
background, as a run whose id the answer gives.

The answer is rebuilt from the recorded event, never kept aside: a retry
with the same Idempotency-Key finds the event in the thread and returns the
same body, after a restart too, recording nothing.
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import Request

from api.auth import note, refuse
from api.authority import check_may_decide, not_open
from api.interrupt_lookup import thread_of_interrupt
from api.problems import Problem
from api.runs import RunRequest
from api.schemas import DecisionBody
from api.services import Services
from api.wire import assistant_id, iso
from domain.errors import (
    ConcurrentUpdateError,
    NotInterruptedError,
    ThreadCancelledError,
    UnknownInterruptError,
)
from domain.hashing import canonical_json, to_json
from domain.identity import Principal
from domain.runtime import is_interrupt_id
from domain.thread import WorkflowThread
from domain.types import Command

IDEMPOTENCY_KEY = re.compile(r"[\x21-\x7e]{1,255}")
ATTEMPTS = 3  # a claim that lost to an unrelated write on the thread is tried again
LOST_RACE = (
    ConcurrentUpdateError,
    NotInterruptedError,
    UnknownInterruptError,
    ThreadCancelledError,
)


def resume_value(body: DecisionBody) -> Any:
    if "resume" in body.model_fields_set:
        return body.resume
    if body.decision in ("edit", "respond"):
        msg = f"Invalid body.resume: a decision of {body.decision!r} needs the value to resume with"
        raise Problem(422, msg, code="invalid-request")
    return {"approve": True, "reject": False}.get(body.decision)


def check_reason(
    interrupt: dict[str, Any], interrupt_id: str, reason: Any, field: str = "body.reason"
) -> None:
    """422 when the graph asked for a reason (`interrupt(..., reason_required=True)`) and none."""
    if interrupt.get("reason_required") and not (isinstance(reason, str) and reason.strip()):
        msg = (
            f"Invalid {field}: interrupt {interrupt_id} asks for a reason with every "
            "answer; nothing was recorded"
        )
        raise Problem(422, msg, code="invalid-request")


def check_idempotency_key(key: str | None) -> None:
    if key is not None and not IDEMPOTENCY_KEY.fullmatch(key):
        msg = "Invalid header.Idempotency-Key: 1 to 255 visible ASCII characters"
        raise Problem(422, msg, code="invalid-request")


def decision_json(
    thread_id: str, graph_id: str, event: WorkflowThread.InterruptResumed
) -> dict[str, Any]:
    actor = event.actor or {}
    return {
        "interrupt_id": event.interrupt_id,
        "thread_id": thread_id,
        "graph_id": graph_id,
        "decision": event.decision,
        "resume": event.resume,
        "reason": event.reason,
        "decided_by": {"id": actor.get("id"), "role": actor.get("role")},
        "decided_at": iso(event.timestamp),
        "idempotency_key": event.idempotency_key,
        "run_id": event.run_id,
        "event": {"version": event.originator_version, "hash": event.event_hash},
    }


def locate(services: Services, request: Request, principal: Principal, interrupt_id: str) -> str:
    """The thread of an interrupt; 404 (recorded) when no thread has it."""
    thread_id = None
    if is_interrupt_id(interrupt_id):
        db = services.read_models.db
        thread_id = thread_of_interrupt(db, interrupt_id)
        if thread_id is None:  # perhaps raised a moment ago: let the read models catch up
            services.read_models.catch_up_to_head()
            thread_id = thread_of_interrupt(db, interrupt_id)
    if thread_id is None:
        message = f"No interrupt {interrupt_id} was ever raised (see GET /approvals)"
        raise refuse(services, request, principal, 404, "unknown_interrupt", message)
    return thread_id


def replay(
    services: Services,
    thread_id: str,
    graph_id: str,
    key: str,
    wanted: tuple[str, str, Any, str | None, str],
) -> dict[str, Any] | None:
    """The first answer given with Idempotency-Key `key`, if the thread recorded one."""
    for event in services.store.thread_events(thread_id):
        if isinstance(event, WorkflowThread.InterruptResumed) and event.idempotency_key == key:
            recorded = (
                event.interrupt_id,
                event.decision,
                canonical_json(event.resume),
                event.reason,
                (event.actor or {}).get("id"),
            )
            if recorded != (*wanted[:2], canonical_json(wanted[2]), *wanted[3:]):
                msg = (
                    f"Idempotency-Key {key!r} was already used at {iso(event.timestamp)} for "
                    f"another answer ({event.decision} of interrupt {event.interrupt_id}); "
                    "use a new key for a new answer"
                )
                raise Problem(422, msg, code="idempotency-key-reused")
            return decision_json(thread_id, graph_id, event)
    return None


def decide(
    services: Services,
    request: Request,
    principal: Principal,
    interrupt_id: str,
    body: DecisionBody,
    key: str | None,
) -> tuple[dict[str, Any], int | None]:
    """Record one answer and start the node again; the answer's body and log position."""
    check_idempotency_key(key)
    resume = to_json(resume_value(body), "The resume value")
    thread_id = locate(services, request, principal, interrupt_id)
    note(request, thread_id=thread_id, interrupt_id=interrupt_id)
    wanted = (interrupt_id, body.decision, resume, body.reason, principal.id)
    for attempt in range(ATTEMPTS):
        thread = services.store.thread(thread_id)
        assert thread is not None, "the read models name only recorded threads"
        if key is not None:
            first = replay(services, thread_id, thread.graph_id, key, wanted)
            if first is not None:
                return first, services.read_models.head()
        if interrupt_id not in thread.interrupts:
            reason = "stale_interrupt" if attempt == 0 else "conflict"
            raise not_open(services, request, principal, thread_id, interrupt_id, reason)
        check_may_decide(services, request, principal, thread, [interrupt_id])
        check_reason(thread.interrupts[interrupt_id], interrupt_id, body.reason)
        graph = services.graph_of_thread(thread.graph_id, thread_id)
        configurable = {
            "thread_id": thread_id,
            "actor": principal.as_actor(),
            "decision": body.decision,
            "reason": body.reason,
            "idempotency_key": key,
        }
        run_request = RunRequest(
            graph=graph,
            thread_id=thread_id,
            input=Command(resume={interrupt_id: resume}),
            config={"configurable": configurable},
            stream_modes=(),
            assistant_id=assistant_id(graph.graph_id),
            metadata={"graph_id": graph.graph_id, "decision": body.decision},
            kwargs={"command": {"resume": {interrupt_id: resume}}, "stream_mode": []},
        )
        try:
            record = services.runs.start(run_request)
        except LOST_RACE:
            continue  # look again: someone answered first, or wrote something else
        except Problem as busy:
            refuse(services, request, principal, 409, "conflict", busy.detail)
            raise
        note(request, run_id=record.run_id)
        events = services.store.thread_events(thread_id, gt=thread.version)
        for event in events:
            if isinstance(event, WorkflowThread.InterruptResumed) and event.run_id == record.run_id:
                return decision_json(thread_id, thread.graph_id, event), record.position
        msg = f"The answer to interrupt {interrupt_id} was recorded but cannot be read back"
        raise RuntimeError(msg)
    raise not_open(services, request, principal, thread_id, interrupt_id, "conflict")
