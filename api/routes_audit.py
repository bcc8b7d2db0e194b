"""Audit: a thread's events and timeline, refused attempts, chain checks, the report."""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi.responses import Response

from api.audit_timeline import jsonable, recorded_events, timeline
from api.auth import Auditor
from api.problems import Problem, problem_responses
from api.routes_approvals import WaitFor
from api.routes_threads import thread_or_404
from api.services import ServicesDep
from domain.verify import verify_thread
from projections.oversight_report import oversight_report
from projections.report_formats import FORMATS
from projections.thread_index import ThreadIndex

router = APIRouter(tags=["audit"])
MEDIA_TYPES = {"json": "application/json", "csv": "text/csv", "html": "text/html"}


@router.get(
    "/threads/{thread_id}/events",
    summary="A thread's events as recorded, with their hashes",
    responses=problem_responses(403, 404),
)
def thread_events(
    thread_id: str,
    services: ServicesDep,
    _: Auditor,
    after: Annotated[int, Query(ge=0, description="only events after this version")] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> dict[str, Any]:
    thread_or_404(services, thread_id)
    return recorded_events(services.store, thread_id, after, limit)


@router.get(
    "/threads/{thread_id}/audit",
    summary="A thread's audit timeline: who did what and when, and its hash chain checked",
    responses=problem_responses(403, 404),
)
def thread_audit(thread_id: str, services: ServicesDep, _: Auditor) -> dict[str, Any]:
    thread_or_404(services, thread_id)
    return timeline(services.store, thread_id)


@router.get(
    "/audit/refusals",
    summary="Refused attempts (no key, wrong role, separation of duties, stale, conflict)",
    responses=problem_responses(403),
)
def refusals(
    services: ServicesDep,
    _: Auditor,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    after: Annotated[int | None, Query(ge=0, description="a `position` from the last page")] = None,
) -> dict[str, Any]:
    """Oldest first; page on with `after` = the last item's `position`."""
    items = [jsonable(asdict(item)) for item in services.keyring.refusals(limit, after)]
    next_after = items[-1]["position"] if len(items) == limit else None
    return {"data": items, "next_after": next_after}


@router.get(
    "/audit/verify",
    summary="Recompute hash chains: one thread, or a page of threads from the thread index",
    responses=problem_responses(403, 404, 503),
)
def verify(
    services: ServicesDep,
    _: Auditor,
    thread_id: str | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
) -> dict[str, Any]:
    if thread_id is not None:
        thread_or_404(services, thread_id)
        report = verify_thread(services.store, thread_id)
        return {"ok": report.ok, "checked": 1, "threads": [asdict(report)], "next_cursor": None}
    services.read_models.catch_up_to_head()
    page = ThreadIndex(services.read_models.db).search(limit=limit, after=cursor)
    reports = [verify_thread(services.store, item.thread_id) for item in page.items]
    return {
        "ok": all(report.ok for report in reports),
        "checked": len(reports),
        "threads": [asdict(report) for report in reports if not report.ok],
        "next_cursor": page.next_cursor,
    }


def _moment(name: str, text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        msg = f"Invalid query.{name}: {text!r} is not an ISO 8601 date or time (e.g. 2025-03-01)"
        raise Problem(422, msg, code="invalid-request") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@router.get(
    "/reports/oversight",
    summary="The Article 14 oversight report for a period, as JSON, CSV or HTML",
    responses=problem_responses(403, 503),
    response_class=Response,
)
def report(
    services: ServicesDep,
    _: Auditor,
    since: Annotated[
        str | None, Query(description="ISO 8601; default 30 days before until")
    ] = None,
    until: Annotated[str | None, Query(description="ISO 8601, excluded; default now")] = None,
    graph_id: str | None = None,
    format: Literal["json", "csv", "html"] = "json",  # noqa: A002 - the query parameter's name
    floor: Annotated[float, Query(ge=0, description="seconds: faster answers are flagged")] = 10.0,
    wait_for: WaitFor = None,
) -> Response:
    now = datetime.now(UTC)
    end = _moment("until", until) or now
    start = _moment("since", since) or end - timedelta(days=30)
    if start >= end:
        raise Problem(422, "Invalid query.since: it must be before until", code="invalid-request")
    if wait_for is None:
        services.read_models.catch_up_to_head()
    else:
        services.read_models.wait_for(wait_for)
    figures = oversight_report(
        services.read_models.db,
        since=start,
        until=end,
        graph_id=graph_id,
        rubber_stamp_seconds=floor,
        now=now,
    )
    return Response(FORMATS[format](figures), media_type=MEDIA_TYPES[format])
