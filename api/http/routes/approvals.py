"""Oversight: the approval queue, decisions, and the stop button."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from api.http.assignments import assign
from api.http.auth import (
    Canceller,
    Decider,
    Lifter,
    QueueReader,
    note,
    throttle,
)
from api.http.decisions import decide
from api.http.deps import ServicesDep
from api.http.positions import set_position
from api.http.problems import Problem, problem_responses
from api.http.reads import queue_reads, record_reads
from api.http.responses import ApprovalsPage, Assignment, Cancellation, Decision, answers
from api.http.schemas import AssignBody, CancelBody, DecisionBody
from domain.oversight.read_log import read_target
from domain.oversight.reviews import review_of
from domain.oversight.suspensions import Suspensions
from domain.retention.retention import Retention, holds_shown
from projections.pending_approvals import PendingApproval, PendingApprovals
from projections.thread_index import ThreadIndex
from service import cancellation
from service.rate_limit import DECISIONS
from service.services import Services
from service.wire import iso, shown_payload

router = APIRouter(tags=["oversight"])

# Log positions are 64-bit (PostgreSQL BIGINT, SQLite INTEGER).
MAX_POSITION = 2**63 - 1
# An age in seconds a timestamp can take away from now (about 100 years).
MAX_AGE_SECONDS = 3_155_760_000.0
WaitFor = Annotated[
    int | None,
    Query(
        ge=0,
        le=MAX_POSITION,
        description="A position from a command's X-Holdpoint-Position header: answer once "
        "the read models have applied it (default: everything recorded before the request)",
    ),
]


@router.get(
    "/approvals",
    summary="The pending approval queue, oldest first",
    response_model=None,  # documented by `answers`, not validated again
    responses={**answers(ApprovalsPage), **problem_responses(403, 503)},
)
def list_approvals(
    services: ServicesDep,
    principal: QueueReader,
    graph_id: str | None = None,
    node: str | None = None,
    role: Annotated[str | None, Query(description="only interrupts requiring this role")] = None,
    assigned_to: Annotated[
        str | None, Query(description="only interrupts assigned to this reviewer")
    ] = None,
    overdue: Annotated[bool, Query(description="only interrupts past their deadline")] = False,
    min_age_seconds: Annotated[float | None, Query(ge=0, le=MAX_AGE_SECONDS)] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
    wait_for: WaitFor = None,
) -> dict[str, Any]:
    """One row per open interrupt; page on with `cursor` (the answer's `next_cursor`).
    The queue includes every event recorded before the request (or up to `wait_for`)."""
    if wait_for is None:
        services.read_models.catch_up_to_head()
    else:
        services.read_models.wait_for(wait_for)
    page = PendingApprovals(services.read_models.db).page(
        graph_id=graph_id,
        node=node,
        role=role,
        assigned_to=assigned_to,
        min_age_seconds=min_age_seconds,
        overdue=overdue,
        limit=limit,
        after=cursor,
    )
    suspensions = Suspensions(services.store)
    suspended = {graph: suspensions.suspended(graph) for graph in {i.graph_id for i in page.items}}
    held = _held(services, page.items)
    data = [
        {
            **asdict(item),
            **shown(services, item),
            "graph_suspended": suspended[item.graph_id],
            "legal_holds": held.get(item.thread_id, []),
            "links": {
                "decision": f"/approvals/{item.interrupt_id}/decision",
                "assign": f"/approvals/{item.interrupt_id}/assign",
                "thread": f"/threads/{item.thread_id}",
                "audit": f"/threads/{item.thread_id}/audit",
            },
        }
        for item in page.items
    ]
    filters: dict[str, object] = {"graph_id": graph_id, "node": node, "role": role}
    filters |= {"assigned_to": assigned_to, "overdue": overdue or None}
    filters["min_age_seconds"] = min_age_seconds
    record_reads(
        services, principal, *queue_reads(read_target("approvals", filters), page.items, "http")
    )
    return {"data": data, "count": page.total, "next_cursor": page.next_cursor}


def shown(services: Services, item: PendingApproval) -> dict[str, Any]:
    """What the reviewer is shown of a pending interrupt: a real LangGraph graph's payload
    in LangGraph's own terms (a message as its fields), and, for a review of an agent's
    tool calls, its actions: each tool, its arguments, description and allowed decisions."""
    payload = shown_payload(services.graphs.get(item.graph_id), item.payload)
    review = review_of(item.payload)
    return {
        "payload": payload,
        "actions": None
        if review is None
        else [
            {
                "name": action["name"],
                "args": action["args"],
                "description": action["description"],
                "allowed_decisions": action["allowed"],
            }
            for action in review["actions"]
        ],
    }


@router.post(
    "/approvals/{interrupt_id}/decision",
    summary="Decide an interrupt (approve, reject, edit, respond, escalate)",
    response_model=None,  # documented by `answers`, not validated again
    responses={**answers(Decision), **problem_responses(400, 403, 404, 409, 413, 503)},
)
def post_decision(
    interrupt_id: str,
    body: DecisionBody,
    request: Request,
    response: Response,
    services: ServicesDep,
    principal: Decider,
    idempotency_key: Annotated[
        str | None,
        Header(
            alias="Idempotency-Key",
            description="Send the same decision again with the same key to get the first "
            "answer back, recording nothing new",
        ),
    ] = None,
) -> dict[str, Any]:
    """The decider is the API key's principal. `approve` without `resume` resumes the
    node with `true`, `reject` with `false`. The node then runs again in the background:
    join `run_id` (GET /threads/{thread_id}/runs/{run_id}/join) for the outcome.
    Of concurrent decisions one wins; the others get 409 saying who decided and when."""
    throttle(services, request, principal, DECISIONS)
    answer, position = decide(services, request, principal, interrupt_id, body, idempotency_key)
    set_position(response, position)
    return answer


@router.post(
    "/approvals/{interrupt_id}/assign",
    summary="Assign an open interrupt to a reviewer, or take the assignment off",
    response_model=None,  # documented by `answers`, not validated again
    responses={**answers(Assignment), **problem_responses(403, 404, 409, 422, 503)},
)
def post_assignment(
    interrupt_id: str,
    body: AssignBody,
    request: Request,
    response: Response,
    services: ServicesDep,
    principal: Decider,
) -> dict[str, Any]:
    """Names who should decide it (`reviewer_id`: a principal with an active key that may
    decide), or no one (`null`). The queue shows it and filters on it; it does not keep
    another reviewer from deciding. Recorded as InterruptAssigned, by the key's principal."""
    thread_id, position = assign(services, request, principal, interrupt_id, body.reviewer_id)
    set_position(response, position)
    return {
        "interrupt_id": interrupt_id,
        "thread_id": thread_id,
        "assigned_to": body.reviewer_id,
        "assigned_by": {"id": principal.id, "role": principal.role},
    }


def _held(services: Services, items: list[PendingApproval]) -> dict[str, list[str]]:
    """The legal holds on each item's thread (by id), read only when some are in place."""
    holds = Retention(services.store).holds()
    if not holds:
        return {}
    index, held = ThreadIndex(services.read_models.db), {}
    for thread_id, graph_id in {(i.thread_id, i.graph_id) for i in items}:
        summary = index.get(thread_id)
        metadata = {} if summary is None else summary.metadata
        shown = holds_shown(holds, thread_id, graph_id, metadata)
        held[thread_id] = [h["hold_id"] for h in shown]
    return held


@router.post(
    "/graphs/{graph_id}/suspend",
    summary="Suspend a graph: no new run and no resume of it until lifted (recorded)",
    responses=problem_responses(403, 404, 409, 422),
)
def suspend_graph(
    graph_id: str, body: CancelBody, request: Request, services: ServicesDep, principal: Canceller
) -> dict[str, Any]:
    """The stop button for a whole graph: `{"reason": "..."}` (required). Runs already
    under way go to their end; stop one with its thread's cancel."""
    graph_or_404(services, graph_id)
    note(request, graph_id=graph_id)
    Suspensions(services.store).suspend(graph_id, principal.as_actor(), body.reason)
    return {"graph_id": graph_id, "suspended": Suspensions(services.store).suspended(graph_id)}


@router.post(
    "/graphs/{graph_id}/lift",
    summary="Lift a graph's suspension (admins; recorded)",
    responses=problem_responses(403, 404, 409, 422),
)
def lift_suspension(
    graph_id: str, body: CancelBody, request: Request, services: ServicesDep, principal: Lifter
) -> dict[str, Any]:
    """`{"reason": "..."}` (required). Its crons fire once for the times missed."""
    graph_or_404(services, graph_id)
    note(request, graph_id=graph_id)
    Suspensions(services.store).lift(graph_id, principal.as_actor(), body.reason)
    return {"graph_id": graph_id, "suspended": None}


def graph_or_404(services: Services, graph_id: str) -> None:
    if graph_id not in services.graphs:
        msg = f"Graph {graph_id!r} not found: serving {', '.join(sorted(services.graphs))}"
        raise Problem(404, msg, code="graph-not-found")


@router.post(
    "/threads/{thread_id}/cancel",
    summary="Cancel a thread for good (the Article 14(4)(e) stop button)",
    response_model=None,  # documented by `answers`, not validated again
    responses={**answers(Cancellation), **problem_responses(403, 404, 409, 503)},
)
async def cancel_thread(
    thread_id: str,
    body: CancelBody,
    request: Request,
    response: Response,
    services: ServicesDep,
    principal: Canceller,
) -> dict[str, Any]:
    """Its pending interrupts are withdrawn; it can still be read, never run again."""
    note(request, thread_id=thread_id)
    actor = principal.as_actor()
    position = await run_in_threadpool(
        cancellation.cancel_thread, services, thread_id, actor, body.reason
    )
    set_position(response, position)
    thread = await run_in_threadpool(services.store.thread, thread_id)
    cancelled_at = thread.modified_on if thread is not None else None
    return {
        "thread_id": thread_id,
        "status": "cancelled",
        "cancelled_by": {"id": principal.id, "role": principal.role},
        "cancelled_at": iso(cancelled_at),
        "reason": body.reason,
    }
