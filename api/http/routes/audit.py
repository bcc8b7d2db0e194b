"""Audit: a thread's events and timeline, refused attempts, chain checks, the report."""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse, Response

from api.http.auth import Auditor
from api.http.deps import ServicesDep
from api.http.problems import Problem, problem_responses
from api.http.reads import record_reads, timeline_read
from api.http.responses import RecordedEvents, RefusalsPage, Timeline, Verification, answers
from api.http.routes.approvals import WaitFor
from api.http.routes.threads import thread_or_404
from api.presenters.audit_timeline import jsonable, recorded_events, timeline
from domain.oversight.read_log import Read, read_target
from domain.retention.retention import Retention, holds_shown
from integrity.reporting import verdict_data
from integrity.verify_log import scan_log, verify_thread_events
from projections.change_log import ChangeLog
from projections.decision_register import DecisionRegister, register_csv
from projections.oversight_report import oversight_report
from projections.report_formats import FORMATS
from projections.timestamps import utc_text
from service.services import Services

router = APIRouter(tags=["audit"])
MEDIA_TYPES = {"json": "application/json", "csv": "text/csv", "html": "text/html"}


@router.get(
    "/threads/{thread_id}/events",
    summary="A thread's events as recorded, with their hashes",
    response_model=None,  # documented by `answers`, not validated again
    responses={**answers(RecordedEvents), **problem_responses(403, 404)},
)
def thread_events(
    thread_id: str,
    services: ServicesDep,
    principal: Auditor,
    after: Annotated[int, Query(ge=0, description="only events after this version")] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> dict[str, Any]:
    thread = thread_or_404(services, thread_id)
    events = recorded_events(services.store, thread_id, after, limit)
    record_reads(services, principal, timeline_read(thread, "http"))
    return events


@router.get(
    "/threads/{thread_id}/audit",
    summary="A thread's audit timeline: who did what and when, and its hash chain checked",
    response_model=None,  # documented by `answers`, not validated again
    responses={**answers(Timeline), **problem_responses(403, 404)},
)
def thread_audit(thread_id: str, services: ServicesDep, principal: Auditor) -> dict[str, Any]:
    thread = thread_or_404(services, thread_id)
    found = timeline(services.store, thread_id)
    holds = Retention(services.store).holds()
    found["legal_holds"] = holds_shown(holds, thread_id, thread.graph_id, dict(thread.metadata))
    record_reads(services, principal, timeline_read(thread, "http"))
    return found


@router.get(
    "/audit/refusals",
    summary="Refused attempts (no key, wrong role, separation of duties, stale, conflict)",
    response_model=None,  # documented by `answers`, not validated again
    responses={**answers(RefusalsPage), **problem_responses(403)},
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
    "/audit/changes",
    summary="Changes outside threads: the memory store, crons and assistants, with who",
    responses=problem_responses(403),
)
def changes(
    services: ServicesDep,
    _: Auditor,
    kind: Annotated[Literal["memory", "cron", "assistant"] | None, Query()] = None,
    actor: Annotated[str | None, Query(description="a principal's id")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    after: Annotated[int | None, Query(ge=0, description="a `position` from the last page")] = None,
) -> dict[str, Any]:
    """Each recorded change that belongs to no thread (a thread's own are in its
    `/threads/{id}/audit`): what changed (`subject`), the event, who made it and what it
    says. Oldest first; page on with `after` = the last item's `position`."""
    services.read_models.catch_up_to_head()
    found = ChangeLog(services.read_models.db).changes(
        kind=kind, actor_id=actor, after=after, limit=limit
    )
    items = [change.json() for change in found]
    return {"data": items, "next_after": items[-1]["position"] if len(items) == limit else None}


@router.get(
    "/audit/verify",
    summary="Verify the record: the whole store (every hash chain, the log's order), or one thread",
    response_model=None,  # documented by `answers`, not validated again
    responses={**answers(Verification), **problem_responses(403, 404, 503)},
)
def verify(
    services: ServicesDep,
    _: Auditor,
    thread_id: Annotated[
        str | None, Query(description="only this thread (default: the whole store)")
    ] = None,
) -> dict[str, Any]:
    """Without `thread_id`, every event of the store is read: each thread's hash chain is
    recomputed, and each aggregate's versions must run 1, 2, 3... in the order of their
    positions (on SQLite, with no position missing). On a large store this takes a while:
    about ten seconds per million events on two cores. `problems` name the thread, version,
    position and kind (altered, missing, reordered, swapped, forged, unreadable). Checking
    against a seal, and bundles, is done with `holdpoint verify --seal` and `--bundle`."""
    if thread_id is not None:
        thread_or_404(services, thread_id)
        count, problems = verify_thread_events(services.store, thread_id)
        services.metrics.observe_verification(len(problems))
        first = problems[0] if problems else None
        report = {
            "thread_id": thread_id,
            "events_checked": count,
            "ok": not problems,
            "broken_at": first.version if first else None,
            "problem": f"{first.kind}: {first.detail}" if first else None,
        }
        return {
            "ok": not problems,
            "scope": "thread",
            "checked": 1,
            "events_checked": count,
            "threads": [report],
            "problems": [asdict(problem) for problem in problems],
            "next_cursor": None,
        }
    verdict = scan_log(services.store).verdict
    services.metrics.observe_verification(len(verdict.problems))
    broken: dict[str, dict[str, Any]] = {}
    for problem in verdict.problems:
        if problem.thread_id is not None and problem.thread_id not in broken:
            broken[problem.thread_id] = {
                "thread_id": problem.thread_id,
                "ok": False,
                "broken_at": problem.version,
                "problem": f"{problem.kind}: {problem.detail}",
            }
    return {
        **verdict_data(verdict),
        "scope": "store",
        "checked": verdict.threads,
        "threads": list(broken.values()),
        "next_cursor": None,
    }


def _moment(name: str, text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text)
        moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
        moment.astimezone(UTC) - timedelta(days=31)  # a period must fit before it
    except (ValueError, OverflowError):
        msg = (
            f"Invalid query.{name}: {text!r} is not an ISO 8601 date or time "
            "(e.g. 2025-03-01) after the first month of year 1"
        )
        raise Problem(422, msg, code="invalid-request") from None
    return moment


def caught_up(services: Services, wait_for: int | None) -> None:
    """The read models up to `wait_for`, or to everything recorded before the request."""
    if wait_for is None:
        services.read_models.catch_up_to_head()
    else:
        services.read_models.wait_for(wait_for)


@router.get(
    "/reports/oversight",
    summary="The Article 14 oversight report for a period, as JSON, CSV or HTML",
    responses=problem_responses(403, 503),
    response_class=Response,
)
def report(
    services: ServicesDep,
    principal: Auditor,
    since: Annotated[
        str | None, Query(description="ISO 8601; default 30 days before until")
    ] = None,
    until: Annotated[str | None, Query(description="ISO 8601, excluded; default now")] = None,
    graph_id: str | None = None,
    format: Literal["json", "csv", "html"] = "json",  # noqa: A002 - the query parameter's name
    floor: Annotated[
        float | None,
        Query(
            ge=0,
            description="seconds: faster answers are flagged (default: the server's "
            "rubber_stamp_seconds, as its oversight policy on record says)",
        ),
    ] = None,
    wait_for: WaitFor = None,
) -> Response:
    now = datetime.now(UTC)
    end = _moment("until", until) or now
    start = _moment("since", since) or end - timedelta(days=30)
    if start >= end:
        raise Problem(422, "Invalid query.since: it must be before until", code="invalid-request")
    caught_up(services, wait_for)
    figures = oversight_report(
        services.read_models.db,
        since=start,
        until=end,
        graph_id=graph_id,
        rubber_stamp_seconds=services.settings.rubber_stamp_seconds if floor is None else floor,
        now=now,
    )
    query = {"since": since, "until": until, "graph_id": graph_id, "format": format}
    record_reads(services, principal, Read("report", read_target("oversight", query), "http"))
    return Response(FORMATS[format](figures), media_type=MEDIA_TYPES[format])


@router.get(
    "/reports/decisions",
    summary="The decision register: one row per decision on an interrupt, as JSON or CSV",
    responses=problem_responses(403, 422),
    response_class=Response,
)
def decision_register(
    services: ServicesDep,
    principal: Auditor,
    since: Annotated[str | None, Query(description="ISO 8601; default: the first")] = None,
    until: Annotated[str | None, Query(description="ISO 8601, excluded; default: now")] = None,
    graph_id: str | None = None,
    format: Literal["json", "csv"] = "json",  # noqa: A002 - the query parameter's name
    wait_for: WaitFor = None,
) -> Response:
    """Each answer, each approval of several (four eyes) and each decision a deadline's
    rule made, oldest first: thread, graph, interrupt, node, the digest of the question
    decided, who decided in which role, the decision (`by`: answer, approval or
    deadline), the reason, when the question was raised, the seconds it took, and the
    deadline that stood."""
    start, end = _moment("since", since), _moment("until", until)
    if start is not None and end is not None and start >= end:
        raise Problem(422, "Invalid query.since: it must be before until", code="invalid-request")
    caught_up(services, wait_for)
    found = DecisionRegister(services.read_models.db).decisions(
        since=None if start is None else utc_text(start),
        until=None if end is None else utc_text(end),
        graph_id=graph_id,
    )
    query = {"since": since, "until": until, "graph_id": graph_id, "format": format}
    record_reads(services, principal, Read("report", read_target("decisions", query), "http"))
    if format == "csv":
        return Response(register_csv(found), media_type=MEDIA_TYPES["csv"])
    return JSONResponse({"decisions": [asdict(decision) for decision in found]})


@router.get(
    "/audit/deliveries",
    summary="Webhook and notification deliveries: each attempt, its status, newest first",
    responses=problem_responses(403),
)
def deliveries(
    services: ServicesDep,
    _: Auditor,
    status: Annotated[
        Literal["waiting", "pending", "delivered", "failed", "refused"] | None, Query()
    ] = None,
    target: Annotated[str | None, Query(description="a target's name, or `run`")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> dict[str, Any]:
    """What was sent where, when, and what came back: a target's signature secret and a
    delivery's body are not shown (the body is the recorded events', `/threads/.../events`)."""
    found = services.deliveries.listed(status=status, target=target, limit=limit)
    return {"deliveries": [delivery.json() for delivery in found]}
