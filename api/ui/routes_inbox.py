"""The inbox: open interrupts, searched, filtered, sorted and paged; refreshed in place by
inbox.js, which also moves through it by keyboard. Its actions (api/ui/inbox_actions.py)
post here and send the browser back to the same inbox."""

from __future__ import annotations

import secrets
from typing import Any
from urllib.parse import parse_qsl, urlencode

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse
from starlette.concurrency import run_in_threadpool

from api.http.assignments import deciders
from api.http.auth import Permission
from api.http.deps import ServicesDep
from api.http.reads import queue_reads, record_reads
from api.ui.access import DecidingViewer, QueueViewer, Viewer
from api.ui.decidable import Refusal, refusal
from api.ui.forms import check_form, read_form
from api.ui.inbox_actions import ACTIONS, NOT_DONE, act, outcome_from_query
from api.ui.inbox_query import AGE_LABELS, SORTS, InboxFilters, InboxItem, read_inbox
from api.ui.pages import PageRoute, render
from domain.oversight.read_log import read_target
from projections.pending_approvals import PendingApprovals
from service.services import Services

router = APIRouter(route_class=PageRoute)


def _inbox_context(request: Request, services: ServicesDep, viewer: Viewer) -> dict[str, Any]:
    services.read_models.catch_up_to_head()
    filters = InboxFilters.from_query(request.query_params)
    queue = PendingApprovals(services.read_models.db)
    inbox = read_inbox(queue, filters, viewer.principal.id)
    target = read_target("inbox", {"graph_id": filters.graph_id, "node": filters.node})
    shown = [item.approval for item in inbox.items]
    record_reads(services, viewer.principal, *queue_reads(target, shown, "ui"))
    may_decide = viewer.may(Permission.DECIDE)
    return {
        "viewer": viewer,
        "filters": filters,
        "inbox": inbox,
        "graphs": sorted(services.graphs),
        "ages": AGE_LABELS,
        "sorts": SORTS,
        "may_decide": may_decide,
        **_decidability(services, viewer, inbox.items, may_decide),
        "deciders": deciders(services) if may_decide else [],
        "back": urlencode(filters.query()),
        "outcome": outcome_from_query(request.query_params),
        "not_done": NOT_DONE,
        "idempotency_key": f"ui-{secrets.token_hex(16)}",
    }


def _decidability(
    services: Services, viewer: Viewer, items: list[InboxItem], may_decide: bool
) -> dict[str, Any]:
    """Why the viewer may not decide each item they may not (`refusals`, by interrupt id),
    and which items' graphs ask for a reason (`reason_required`), read from the threads."""
    refused: dict[str, Refusal] = {}
    needs_reason: set[str] = set()
    for item in items if may_decide else ():
        thread = services.store.thread(item.approval.thread_id)
        interrupt_id = item.approval.interrupt_id
        if thread is None or interrupt_id not in thread.interrupts:
            continue  # decided since the read model was read: the next refresh drops it
        if thread.interrupts[interrupt_id].get("reason_required"):
            needs_reason.add(interrupt_id)
        found = refusal(services, viewer, thread, interrupt_id)
        if found is not None:
            refused[interrupt_id] = found
    return {"refusals": refused, "reason_required": needs_reason}


@router.get("/inbox")
def inbox_page(request: Request, services: ServicesDep, viewer: QueueViewer) -> Response:
    return render(request, "inbox.html", **_inbox_context(request, services, viewer))


@router.get("/inbox/queue")
def inbox_queue(request: Request, services: ServicesDep, viewer: QueueViewer) -> Response:
    """The queue part of the inbox alone, for inbox.js to swap in when it changed."""
    return render(request, "_queue.html", **_inbox_context(request, services, viewer))


@router.post("/inbox/act")
async def inbox_act(request: Request, services: ServicesDep, viewer: DecidingViewer) -> Response:
    """Assign, unassign, claim, approve or reject the selected items, one by one; back to
    the inbox as it was filtered, saying what was done."""
    form = await read_form(request)
    check_form(services, request, form, viewer.session.csrf_token, viewer.principal)
    action = form.get("action", "")
    if action not in ACTIONS:
        return _back(form, {})
    body = (await request.body()).decode("utf-8")
    ids = list(dict.fromkeys(v for k, v in parse_qsl(body) if k == "interrupt" and v))
    selected = [(i, form.get(f"digest-{i}")) for i in ids]
    outcome = await run_in_threadpool(act, services, request, viewer, action, selected, form)
    return _back(form, outcome.query())


def _back(form: dict[str, str], said: dict[str, Any]) -> RedirectResponse:
    """To the inbox with the filters the form came from (read again: no other place)."""
    filters = InboxFilters.from_query(dict(parse_qsl(form.get("back", ""))))
    query = {**filters.query(), **said}
    if form.get("at", "").isdigit():
        query["at"] = form["at"]
    return RedirectResponse(f"/ui/inbox?{urlencode(query, doseq=True)}", status_code=303)
