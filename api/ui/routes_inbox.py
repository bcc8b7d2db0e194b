"""The inbox: open interrupts, filtered, sorted and paged; refreshed in place by inbox.js."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from api.http.auth import Permission
from api.http.deps import ServicesDep
from api.http.reads import queue_reads, record_reads
from api.ui.access import QueueViewer, Viewer
from api.ui.inbox_query import AGE_LABELS, SORTS, InboxFilters, read_inbox
from api.ui.pages import PageRoute, render
from domain.oversight.read_log import read_target
from projections.pending_approvals import PendingApprovals

router = APIRouter(route_class=PageRoute)


def _inbox_context(request: Request, services: ServicesDep, viewer: Viewer) -> dict[str, Any]:
    services.read_models.catch_up_to_head()
    filters = InboxFilters.from_query(request.query_params)
    inbox = read_inbox(PendingApprovals(services.read_models.db), filters)
    target = read_target("inbox", {"graph_id": filters.graph_id, "node": filters.node})
    shown = [item.approval for item in inbox.items]
    record_reads(services, viewer.principal, *queue_reads(target, shown, "ui"))
    return {
        "viewer": viewer,
        "filters": filters,
        "inbox": inbox,
        "graphs": sorted(services.graphs),
        "ages": AGE_LABELS,
        "sorts": SORTS,
        "may_decide": viewer.may(Permission.DECIDE),
    }


@router.get("/inbox")
def inbox_page(request: Request, services: ServicesDep, viewer: QueueViewer) -> Response:
    return render(request, "inbox.html", **_inbox_context(request, services, viewer))


@router.get("/inbox/queue")
def inbox_queue(request: Request, services: ServicesDep, viewer: QueueViewer) -> Response:
    """The queue part of the inbox alone, for inbox.js to swap in when it changed."""
    return render(request, "_queue.html", **_inbox_context(request, services, viewer))
