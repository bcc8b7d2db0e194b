"""A decision at the HTTP edge: from the request to the use case and back.

The use case (`service.decisions.decide`) records the answer or raises a typed error.
Here, once for the API and the browser UI: the Idempotency-Key's form is checked, the
use case's refusals are recorded (`record_refused_answer`), an answer the domain found
wrong becomes a 422 naming the request's fields, and the recorded answer is shaped as
the API answers it.
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import Request

from api.http.auth import action_of, note, record_refusal
from api.http.problems import Problem
from api.http.schemas import DecisionBody
from domain.access.identity import Principal
from domain.errors import (
    DecisionContradictionError,
    HoldpointError,
    ReasonRequiredError,
    ResumeRequiredError,
)
from domain.oversight.hold_points import NO_VALUE
from domain.record.thread import WorkflowThread
from service import decisions
from service.services import Services
from service.wire import iso

IDEMPOTENCY_KEY = re.compile(r"[\x21-\x7e]{1,255}")
DECISION_FIELDS = {"decision": "body.decision", "resume": "body.resume", "reason": "body.reason"}
ANSWER_ERRORS = (DecisionContradictionError, ReasonRequiredError, ResumeRequiredError)


def answer_problem(
    error: DecisionContradictionError | ReasonRequiredError | ResumeRequiredError,
    fields: dict[str, str],
) -> Problem:
    """The 422 for an answer the domain found wrong, naming the request's fields: `fields`
    says where the request carries the "decision", "resume" and "reason"."""
    if isinstance(error, DecisionContradictionError):
        msg = f"Invalid {fields['resume']}: it contradicts {fields['decision']}: {error}"
        return Problem(422, msg, code="decision-contradicts-resume")
    if isinstance(error, ResumeRequiredError):
        return Problem(422, f"Invalid {fields['resume']}: {error}", code="invalid-request")
    return Problem(422, f"Invalid {fields['reason']}: {error}", code="reason-required")


def record_refused_answer(
    services: Services, request: Request, principal: Principal, error: Exception
) -> None:
    """Put an answer's refusal on record, unless it is none or the domain's own."""
    reason = decisions.refusal_of(error)
    if reason is not None:
        record_refusal(services, request, principal, reason, str(error))


def locate(services: Services, request: Request, principal: Principal, interrupt_id: str) -> str:
    """The thread of an interrupt; InterruptNeverRaisedError, on record, when none has it."""
    try:
        return decisions.thread_of(services, interrupt_id)
    except HoldpointError as error:
        record_refused_answer(services, request, principal, error)
        raise


def check_idempotency_key(key: str | None) -> None:
    if key is not None and not IDEMPOTENCY_KEY.fullmatch(key):
        msg = "Invalid header.Idempotency-Key: 1 to 255 visible ASCII characters"
        raise Problem(422, msg, code="invalid-request")


def decide(
    services: Services,
    request: Request,
    principal: Principal,
    interrupt_id: str,
    body: DecisionBody,
    key: str | None,
) -> tuple[dict[str, Any], int | None]:
    """Record one answer (the use case); the answer's body and log position."""
    check_idempotency_key(key)
    note(request, interrupt_id=interrupt_id)
    decision = decisions.Decision(
        interrupt_id,
        body.decision,
        body.resume if "resume" in body.model_fields_set else NO_VALUE,
        body.reason,
        body.payload_digest,
        key,
    )
    try:
        decided = decisions.decide(services, principal, decision, action_of(request))
    except ANSWER_ERRORS as error:
        raise answer_problem(error, DECISION_FIELDS) from None
    except HoldpointError as error:
        record_refused_answer(services, request, principal, error)
        raise
    note(request, thread_id=decided.thread_id, run_id=decided.event.run_id)
    answer = decision_json(decided)
    run = services.runs.store.get(decided.event.run_id) if answer["resumed"] else None
    answer["run"] = None
    if run is not None:
        answer["run"] = {"run_id": run.run_id, "status": run.status, "attempt": run.attempt}
    return answer, decided.position


def decision_json(decided: decisions.Decided) -> dict[str, Any]:
    """An answer as recorded: an InterruptResumed, or an InterruptApproved (an approval
    still short of those needed: `approvals` says how many, and no node ran)."""
    event = decided.event
    actor = event.actor or {}
    approved = isinstance(event, WorkflowThread.InterruptApproved)
    return {
        "interrupt_id": event.interrupt_id,
        "thread_id": decided.thread_id,
        "graph_id": decided.graph_id,
        "decision": decisions.decision_of(event),
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
