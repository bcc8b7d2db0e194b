"""`POST /approvals/{interrupt_id}/decision`: a human answers an interrupt.

The answer is claimed before any node runs: the thread records
InterruptResumed (with the decider from the API key, the decision, the
reason, the digest of the payload answered and the Idempotency-Key) in one
commit, and of concurrent answers the store lets exactly one commit. The
interrupted node then runs again in the background, as a run whose id the
answer gives. Who may answer, and how, are the domain's rules
(domain/oversight/hold_points.py), which the run checks as it begins: a refusal comes
back as the domain's error, already recorded. An approval short of the
approvals an interrupt needs (four eyes) records InterruptApproved and the
interrupt stays pending.

The answer is rebuilt from the recorded event, never kept aside: a retry
with the same Idempotency-Key finds the event in the thread and returns the
same body, after a restart too, recording nothing.
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import Request

from api.http.auth import action_of, note, refuse
from api.http.authority import not_open
from api.http.problems import Problem
from api.http.schemas import DecisionBody
from domain.access.identity import Principal
from domain.engine.runtime import REQUEST_KEY
from domain.errors import (
    ConcurrentUpdateError,
    DecisionContradictionError,
    NotInterruptedError,
    ReasonRequiredError,
    ThreadCancelledError,
    UnknownInterruptError,
)
from domain.oversight.hold_points import decision_value
from domain.record.hashing import canonical_json, to_json
from domain.record.thread import WorkflowThread
from domain.types import Command
from service.runs import RunRequest
from service.services import Services
from service.wire import assistant_id, iso

IDEMPOTENCY_KEY = re.compile(r"[\x21-\x7e]{1,255}")
ATTEMPTS = 3  # a claim that lost to an unrelated write on the thread is tried again
LOST_RACE = (
    ConcurrentUpdateError,
    NotInterruptedError,
    UnknownInterruptError,
    ThreadCancelledError,
)


def resume_value(body: DecisionBody, interrupt: dict[str, Any]) -> Any:
    """The body's resume, or what its decision resumes with: approve true, reject false
    (unless the interrupt declares its own), escalate null."""
    if "resume" in body.model_fields_set:
        return body.resume
    if body.decision in ("edit", "respond"):
        msg = f"Invalid body.resume: a decision of {body.decision!r} needs the value to resume with"
        raise Problem(422, msg, code="invalid-request")
    return decision_value(body.decision, interrupt)


def answer_problem(
    error: DecisionContradictionError | ReasonRequiredError, fields: dict[str, str]
) -> Problem:
    """The 422 for an answer the domain found wrong, naming the request's fields: `fields`
    says where the request carries the "decision", "resume" and "reason"."""
    if isinstance(error, DecisionContradictionError):
        msg = f"Invalid {fields['resume']}: it contradicts {fields['decision']}: {error}"
        return Problem(422, msg, code="decision-contradicts-resume")
    return Problem(422, f"Invalid {fields['reason']}: {error}", code="reason-required")


DECISION_FIELDS = {"decision": "body.decision", "resume": "body.resume", "reason": "body.reason"}


def check_idempotency_key(key: str | None) -> None:
    if key is not None and not IDEMPOTENCY_KEY.fullmatch(key):
        msg = "Invalid header.Idempotency-Key: 1 to 255 visible ASCII characters"
        raise Problem(422, msg, code="invalid-request")


_DEFAULT = object()  # a body that gave no resume, in `replay`'s `wanted`


def decision_of(event: Any) -> str:
    return "approve" if isinstance(event, WorkflowThread.InterruptApproved) else event.decision


def decision_json(thread_id: str, graph_id: str, event: Any) -> dict[str, Any]:
    """An answer as recorded: an InterruptResumed, or an InterruptApproved (an approval
    still short of those needed: `approvals` says how many, and no node ran)."""
    actor = event.actor or {}
    approved = isinstance(event, WorkflowThread.InterruptApproved)
    return {
        "interrupt_id": event.interrupt_id,
        "thread_id": thread_id,
        "graph_id": graph_id,
        "decision": decision_of(event),
        "resume": event.resume,
        "reason": event.reason,
        "payload_digest": event.digest,
        "decided_by": {"id": actor.get("id"), "role": actor.get("role")},
        "decided_at": iso(event.timestamp),
        "idempotency_key": event.idempotency_key,
        "run_id": event.run_id,
        "approvals": {"given": event.approvals, "needed": event.needed} if approved else None,
        "resumed": not approved,
        "event": {"version": event.originator_version, "hash": event.event_hash},
    }


def locate(services: Services, request: Request, principal: Principal, interrupt_id: str) -> str:
    """The thread of an interrupt; 404 (recorded) when no thread has it."""
    thread_id = services.read_models.thread_of_interrupt(interrupt_id)
    if thread_id is None:
        message = f"No interrupt {interrupt_id} was ever raised (see GET /approvals)"
        raise refuse(services, request, principal, 404, "unknown_interrupt", message)
    return thread_id


ANSWERS = (WorkflowThread.InterruptResumed, WorkflowThread.InterruptApproved)


def replay(
    services: Services,
    thread_id: str,
    graph_id: str,
    key: str,
    wanted: tuple[str, str, Any, str | None, str],
) -> dict[str, Any] | None:
    """The first answer given with Idempotency-Key `key`, if the thread recorded one.

    `wanted`: (interrupt id, decision, resume, reason, decider) of the answer sent again;
    its resume is compared only when the body gave one."""
    for event in services.store.thread_events(thread_id):
        if isinstance(event, ANSWERS) and event.idempotency_key == key:
            resume = event.resume if wanted[2] is _DEFAULT else wanted[2]
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
    """Record one answer (and start the node again, unless more approvals are needed);
    the answer's body and log position."""
    check_idempotency_key(key)
    thread_id = locate(services, request, principal, interrupt_id)
    note(request, thread_id=thread_id, interrupt_id=interrupt_id)
    given = "resume" in body.model_fields_set
    sent = to_json(body.resume, "The resume value") if given else _DEFAULT
    wanted = (interrupt_id, body.decision, sent, body.reason, principal.id)
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
        resume = to_json(resume_value(body, thread.interrupts[interrupt_id]), "The resume value")
        graph = services.graph_of_thread(thread.graph_id, thread_id)
        configurable = {
            "thread_id": thread_id,
            "actor": principal.as_actor(),
            "decision": body.decision,
            "reason": body.reason,
            "idempotency_key": key,
            "payload_digest": body.payload_digest,
            REQUEST_KEY: {"action": action_of(request), "target": interrupt_id},
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
        except (DecisionContradictionError, ReasonRequiredError) as error:
            raise answer_problem(error, DECISION_FIELDS) from None
        note(request, run_id=record.run_id)
        events = services.store.thread_events(thread_id, gt=thread.version)
        for event in events:
            if isinstance(event, ANSWERS) and event.run_id == record.run_id:
                return decision_json(thread_id, thread.graph_id, event), record.position
        msg = f"The answer to interrupt {interrupt_id} was recorded but cannot be read back"
        raise RuntimeError(msg)
    raise not_open(services, request, principal, thread_id, interrupt_id, "conflict")
