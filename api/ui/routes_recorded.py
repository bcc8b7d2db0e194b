"""The page a decision (or a cancel) leads to: what was recorded, and the next in the queue.

Reached by the 303 after the form's POST (post-redirect-get): a GET, so that reloading
it records nothing. It reads the event back from the thread by its version, and says
its kind, reason, time, who, and its hash in the chain (integrity/).
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Query, Request, Response

from api.http.deps import ServicesDep
from api.http.problems import Problem
from api.ui.access import QueueViewer, Viewer
from api.ui.decision_record import (
    next_in_queue,
    raised_node,
    recorded_event,
    thread_status,
)
from api.ui.pages import PageRoute, render
from service.decisions import thread_of
from service.errors import InterruptNeverRaisedError
from service.services import Services

router = APIRouter(route_class=PageRoute)


def recorded_url(interrupt_id: str, version: int) -> str:
    return f"/ui/approvals/{quote(interrupt_id, safe='')}/recorded?version={version}"


def _context(services: Services, viewer: Viewer, interrupt_id: str, version: int) -> dict[str, Any]:
    try:
        thread_id = thread_of(services, interrupt_id)
    except InterruptNeverRaisedError as error:
        raise Problem(404, f"{error} (see the inbox)") from None
    thread = services.store.thread(thread_id)
    recorded = recorded_event(services, thread_id, interrupt_id, version)
    if thread is None or recorded is None:
        msg = f"Nothing was recorded for interrupt {interrupt_id} at version {version}"
        raise Problem(404, msg)
    return {
        "viewer": viewer,
        "interrupt_id": interrupt_id,
        "thread_id": thread_id,
        "graph_id": thread.graph_id,
        "node": raised_node(services, thread_id, interrupt_id),
        "status": thread_status(services, thread),
        "open": interrupt_id in thread.interrupts,
        "recorded": recorded,
        "next": next_in_queue(services, viewer, interrupt_id),
    }


@router.get("/approvals/{interrupt_id}/recorded")
def recorded_page(
    interrupt_id: str,
    request: Request,
    services: ServicesDep,
    viewer: QueueViewer,
    version: Annotated[int, Query(ge=1)],
) -> Response:
    return render(request, "recorded.html", **_context(services, viewer, interrupt_id, version))
