"""Who may answer an interrupt, and what became of one that is no longer open.

A reviewer or an admin may answer an interrupt. An interrupt raised with
`required_role` narrows that: only that role (or an admin) may answer it.
With separation of duties (on by default) the principal who started the
thread may answer none of its interrupts, whatever their role. Every refusal
is recorded (see api/auth.py).
"""

from __future__ import annotations

from typing import Any

from fastapi import Request

from api.auth import refuse
from api.problems import Problem
from api.services import Services
from api.wire import iso
from domain.identity import Principal
from domain.thread import WorkflowThread


def check_may_decide(
    services: Services,
    request: Request,
    principal: Principal,
    thread: WorkflowThread,
    interrupt_ids: list[str],
) -> None:
    for interrupt_id in interrupt_ids:
        record = thread.interrupts.get(interrupt_id)
        if record is None:
            continue  # not pending: the caller answers that
        required = record.get("required_role") or "reviewer"
        if principal.role not in ("admin", required):
            message = (
                f"Interrupt {interrupt_id} may be answered by role {required!r} (or admin); "
                f"principal {principal.id!r} has role {principal.role!r}"
            )
            raise refuse(services, request, principal, 403, "wrong_role", message)
    started_by = thread.started_by.get("id")
    if services.settings.separation_of_duties and started_by == principal.id:
        message = (
            f"Principal {principal.id!r} started thread {thread.thread_id!r}, so may not "
            "answer its interrupts (separation of duties): another reviewer must"
        )
        raise refuse(services, request, principal, 403, "separation_of_duties", message)


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
