"""An assignment at the HTTP edge, once for the API and the browser UI: who should
decide an open interrupt (a principal with an active key of a deciding role), or no one.

Recorded as InterruptAssigned, by the acting principal. It does not keep another
reviewer from deciding: the queue shows it and filters on it.
"""

from __future__ import annotations

from fastapi import Request

from api.http.auth import Permission, note, roles_holding
from api.http.decisions import locate
from api.http.problems import Problem
from domain.access.identity import Principal
from service.services import Services


def assign(
    services: Services,
    request: Request,
    principal: Principal,
    interrupt_id: str,
    reviewer_id: str | None,
) -> tuple[str, int | None]:
    """Record the assignment; the interrupt's thread id and the event's log position."""
    thread_id = locate(services, request, principal, interrupt_id)
    note(request, thread_id=thread_id)
    if reviewer_id is not None:
        check_reviewer(services, reviewer_id)
    position = services.store.assign(thread_id, interrupt_id, reviewer_id, principal.as_actor())
    return thread_id, position


def deciders(services: Services) -> list[str]:
    """The principals an interrupt may be assigned to, by id."""
    roles = roles_holding(services.settings.roles, Permission.DECIDE)
    keys = services.keyring.list()
    return sorted({key.principal_id for key in keys if key.role in roles and not key.revoked})


def check_reviewer(services: Services, reviewer_id: str) -> None:
    if reviewer_id not in deciders(services):
        roles = roles_holding(services.settings.roles, Permission.DECIDE)
        msg = (
            f"Invalid body.reviewer_id: {reviewer_id!r} holds no active key of a role that may "
            f"decide ({', '.join(roles)})"
        )
        raise Problem(422, msg, code="invalid-request")
