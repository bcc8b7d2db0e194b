"""Legal holds over HTTP: list, place (auditors and admins) and lift (admins), recorded
with the authenticated actor and a reason. A held thread is never purged."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field

from api.http.auth import Auditor, Lifter, note
from api.http.deps import ServicesDep
from api.http.problems import problem_responses
from api.http.schemas import CancelBody
from domain.retention.retention import Retention
from domain.retention.scope import Scope

router = APIRouter(tags=["oversight"])


class HoldBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    scope: str = Field(
        max_length=1000,
        description="What it holds: thread:ID, graph:ID, metadata:KEY or metadata:KEY=VALUE",
    )
    reason: str | None = Field(default=None, max_length=4000, description="Why: required")


@router.get(
    "/legal-holds",
    summary="The legal holds in place, oldest first",
    responses=problem_responses(403),
)
def list_holds(services: ServicesDep, _: Auditor) -> list[dict[str, Any]]:
    return [_shown(hold) for hold in Retention(services.store).holds()]


@router.post(
    "/legal-holds",
    status_code=201,
    summary="Place a legal hold: no purge removes what it covers (recorded)",
    responses=problem_responses(403, 422),
)
def place_hold(
    body: HoldBody, request: Request, services: ServicesDep, principal: Auditor
) -> dict[str, Any]:
    retention = Retention(services.store)
    hold_id = retention.place_hold(body.scope, principal.as_actor(), body.reason)
    note(request, hold_id=hold_id)
    (placed,) = [h for h in retention.holds() if h["hold_id"] == hold_id]
    return _shown(placed)


@router.post(
    "/legal-holds/{hold_id}/lift",
    summary="Lift a legal hold (admins; recorded)",
    responses=problem_responses(403, 404, 422),
)
def lift_hold(
    hold_id: str, body: CancelBody, request: Request, services: ServicesDep, principal: Lifter
) -> dict[str, Any]:
    """`{"reason": "..."}` (required)."""
    note(request, hold_id=hold_id)
    Retention(services.store).lift_hold(hold_id, principal.as_actor(), body.reason)
    return {"hold_id": hold_id, "lifted": True}


def _shown(hold: dict[str, Any]) -> dict[str, Any]:
    return {**hold, "scope": str(Scope.from_json(hold["scope"]))}
