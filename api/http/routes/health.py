"""Health, readiness and metrics. Health and readiness need no key."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response

from api.http.auth import Auditor
from api.http.deps import ServicesDep
from api.http.problems import problem_responses
from projections.quarantine import Quarantine
from service.metrics import CONTENT_TYPE

router = APIRouter(tags=["health"])


@router.get("/healthz", summary="Liveness: the process answers")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/ok", summary="Liveness, as LangGraph's server names it", include_in_schema=False)
async def ok() -> dict[str, bool]:
    return {"ok": True}


QUARANTINE_LISTED = 100  # quarantined events named in the body (all are counted)


@router.get(
    "/readyz",
    summary="Readiness: the store answers, how far behind each read model is, and the "
    "events the read models passed by because they cannot be decoded",
    responses={
        200: {
            "description": 'Ready; or `"status": "degraded"`: the server serves, but some '
            "events cannot be decoded (`quarantined` names them; `holdpoint verify` says "
            "what is wrong)"
        },
        503: {"description": "The store does not answer, or the projector stopped"},
    },
)
def readyz(services: ServicesDep) -> JSONResponse:
    body: dict[str, Any] = {"status": "ready", "store": "ok", "projector": "ok"}
    ready = True
    quarantined, count = [], 0
    try:
        statuses = services.read_models.status()
        quarantine = Quarantine(services.read_models.db)
        quarantined, count = quarantine.events(QUARANTINE_LISTED), quarantine.count()
    except Exception as error:  # any failure to reach the store makes the server not ready
        body["store"] = f"unavailable: {type(error).__name__}"
        statuses, ready = [], False
    if not services.read_models.alive:
        body["projector"] = f"stopped: {services.read_models.failure or 'not running'}"
        ready = False
    elif not services.read_models.in_process:
        body["projector"] = "external (holdpoint projector)"
    body["projections"] = [
        {"name": s.name, "position": s.position, "head": s.head, "lag": s.lag} for s in statuses
    ]
    body["lag"] = max((s.lag for s in statuses), default=0)
    body["quarantined_count"] = count
    body["quarantined"] = [
        {
            "position": event.position,
            "thread_id": event.thread_id,
            "originator_id": event.originator_id,
            "version": event.originator_version,
            "event": event.event_name,
            "error": event.error,
            "first_seen_at": event.first_seen_at,
        }
        for event in quarantined
    ]
    if not ready:
        body["status"] = "not ready"
    elif count:  # it serves: every other thread reads and runs; these events are passed by
        body["status"] = "degraded"
    return JSONResponse(body, status_code=200 if ready else 503)


@router.get(
    "/metrics",
    summary="Prometheus metrics",
    responses=problem_responses(403),
    response_class=Response,
)
def metrics(services: ServicesDep, _: Auditor) -> Response:
    return Response(services.metrics.exposition(), media_type=CONTENT_TYPE)
