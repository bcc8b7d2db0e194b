"""What became of an interrupt that is no longer open, for the 409 that says so.

Who may answer an interrupt is the domain's rule (domain/oversight/hold_points.py).
"""

from __future__ import annotations

from typing import Any

from fastapi import Request

from api.http.auth import refuse
from api.http.problems import Problem
from domain.access.identity import Principal
from domain.record.thread import WorkflowThread
from service.services import Services
from service.wire import iso


def fate(services: Services, thread_id: str, interrupt_id: str) -> tuple[str, dict[str, Any]]:
    """Why an interrupt is not open: a sentence, and members for the problem."""
    raised = False
    for event in services.store.thread_events(thread_id):
        if isinstance(event, WorkflowThread.InterruptRaised) and event.interrupt_id == interrupt_id:
            raised = True
        elif (
            isinstance(event, WorkflowThread.InterruptResumed)
            and event.interrupt_id == interrupt_id
        ):
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
            and event.interrupt_id == interrupt_id
        ):
            if event.rule.get("action") != "escalate":
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
        text = f"Interrupt {interrupt_id} is no longer pending: its node asked again"
        return text, {}
    return f"No interrupt {interrupt_id} in thread {thread_id!r}", {}


def not_open(
    services: Services,
    request: Request,
    principal: Principal,
    thread_id: str,
    interrupt_id: str,
    reason: str,
) -> Problem:
    """The recorded 409 for an answer to an interrupt that is not open (any more)."""
    text, members = fate(services, thread_id, interrupt_id)
    message = f"{text}; nothing was recorded"
    problem = refuse(services, request, principal, 409, reason, message, **members)
    problem.code = "interrupt-not-open"
    return problem
