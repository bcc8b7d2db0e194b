"""The FastAPI app: `create_app(services)` wires routers, errors, logs and metrics."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool

from api.http.cors import install_cors
from api.http.input_limits import InputLimitsMiddleware
from api.http.problems import install_problem_handlers
from api.http.request_log import RequestLogMiddleware
from api.http.routes import (
    approvals,
    assistants,
    audit,
    crons,
    health,
    legal_holds,
    reads,
    runs,
    store,
    threads,
    time_travel,
)
from api.ui.mount import install_ui
from service.services import Services

DESCRIPTION = """
Human oversight for workflow graphs. Two families of endpoints:

* **LangGraph-compatible** (assistants, threads, runs): the official `langgraph-sdk`
  client drives Holdpoint unchanged.
* **Oversight**: the approval queue, decisions by authenticated reviewers, the stop
  button, each thread's events and audit timeline, refused attempts, the Article 14 report.

Every endpoint but `/healthz`, `/readyz`, `/ok`, `/info`, `/schemas/events` and these docs
needs an API key, as `Authorization: Bearer <key>` or `x-api-key: <key>`. Errors are
RFC 9457 problem details.
Commands answer with `X-Holdpoint-Position`; reads of read models take `wait_for`.
"""

TAGS = [
    {"name": "oversight", "description": "The approval queue, decisions, cancellation"},
    {"name": "audit", "description": "Events, timelines, refusals, chain checks, reports"},
    {"name": "threads (LangGraph)", "description": "As LangGraph's Agent Server"},
    {"name": "runs (LangGraph)", "description": "As LangGraph's Agent Server"},
    {"name": "threads (time travel)", "description": "A thread at any version, diffs, lineage"},
    {"name": "assistants (LangGraph)", "description": "One per served graph"},
    {"name": "health", "description": "Liveness, readiness, metrics"},
]


def create_app(services: Services) -> FastAPI:
    """The app over `services`; its lifespan starts and stops the in-process projector."""

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        services.read_models.start()
        yield
        await run_in_threadpool(services.close)

    app = FastAPI(
        title="Holdpoint",
        version="0.1.0",
        description=DESCRIPTION,
        openapi_tags=TAGS,
        lifespan=lifespan,
        # Holdpoint has its own metrics (/metrics) and request log (api/http/request_log.py);
        # FastAPI's OpenTelemetry hooks would look up the global providers on every request.
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.state.services = services
    install_problem_handlers(app)
    # The LangGraph routes first: a request is matched against the routes in order, and
    # runs and threads are the busiest (no two routers share a method and path).
    for module in (
        crons,  # before runs: /runs/crons is no run
        runs,
        threads,
        time_travel,
        approvals,
        legal_holds,
        audit,
        reads,
        assistants,
        store,
        health,
    ):
        app.include_router(module.router)
    install_ui(app, services)  # the browser interface under /ui
    # Inside the request log (added last, so outermost): its 413 comes first, then these.
    app.add_middleware(InputLimitsMiddleware)
    # Outside the input limits, so that a page on an allowed origin can read their 413.
    install_cors(app, services.settings.cors_allow_origins)
    app.add_middleware(
        RequestLogMiddleware,
        metrics=services.metrics,
        max_body_bytes=services.settings.max_body_bytes,
    )
    return app
