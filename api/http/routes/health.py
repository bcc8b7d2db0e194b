"""Health, readiness, the server's description and metrics. All but metrics need no key."""

from __future__ import annotations

from importlib.metadata import version
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from api.http.auth import Auditor
from api.http.deps import ServicesDep
from api.http.problems import problem_responses
from integrity.event_schemas import catalogue
from projections.quarantine import Quarantine
from service.metrics import CONTENT_TYPE

router = APIRouter(tags=["health"])


@router.get("/healthz", summary="Liveness: the process answers")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get(
    "/ok",
    summary="Liveness, as LangGraph's server answers it; with check_db=1, the store too",
    responses={
        **problem_responses(422),
        500: {"description": "check_db=1, and the store does not answer"},
    },
)
async def ok(
    services: ServicesDep, check_db: Annotated[int, Query(ge=0, le=1)] = 0
) -> JSONResponse:
    if not check_db:
        return JSONResponse({"ok": True, "services": {"database": "skipped"}})
    try:
        await run_in_threadpool(services.read_models.status)
    except Exception:  # any failure to reach the store is the answer
        return JSONResponse({"ok": False, "services": {"database": "unhealthy"}}, 500)
    return JSONResponse({"ok": True, "services": {"database": "healthy"}})


@router.get("/info", summary="The server, as LangGraph's server describes itself")
async def info() -> dict[str, Any]:
    """What browser clients (Agent Chat UI and its forks) read before they connect. The
    flags say which of LangGraph's server's features are here."""
    return {
        "version": version("holdpoint"),
        "langgraph_py_version": version("langgraph"),
        "flags": {
            "assistants": True,
            "crons": True,
            "langsmith": False,
            "langsmith_tracing_replicas": False,
            "langsmith_tracing_session_on_runs": False,
        },
        "host": {
            "kind": "holdpoint",
            "project_id": None,
            "host_revision_id": None,
            "revision_id": None,
            "tenant_id": None,
        },
    }


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


@router.get(
    "/schemas/events",
    summary="The JSON Schema of every recorded event (published, versioned; no key needed)",
)
def event_schemas() -> dict[str, Any]:
    """As `docs/schemas/events.json`: each event's stored state, by topic."""
    return EVENT_SCHEMAS


EVENT_SCHEMAS = catalogue()
