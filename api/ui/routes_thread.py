"""One thread: its audit timeline, its state at any version with the diff before it,
its hash chain's check, its forks, and its evidence bundle as a download."""

from __future__ import annotations

import json
import os
from functools import partial
from typing import Any
from urllib.parse import quote

import structlog
from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse
from starlette.concurrency import run_in_threadpool

from api.http.auth import Permission, refuse
from api.http.deps import ServicesDep
from api.http.problems import Problem
from api.http.reads import record_reads
from api.ui.access import AuditingViewer, ReadingViewer, Viewer
from api.ui.forms import check_form, read_form
from api.ui.pages import PageRoute, render
from api.ui.seal_reach import seal_reach
from api.ui.thread_timeline import completed, thread_timeline, with_payloads
from domain.history.time_travel import diff_versions, head_version, state_at_version
from domain.integrity.seal import SealFormatError
from domain.oversight.read_log import Read
from domain.retention.retention import Retention, holds_shown
from integrity.export import export_thread
from integrity.reporting import problem_line
from integrity.sealing import SealConflictError, latest_seal, make_seal
from integrity.signing import KEY_VARIABLE, SealKeyError, load_private_key
from projections.read_records import ReadRecords
from service.lineage import lineage
from service.services import Services

router = APIRouter(route_class=PageRoute)
log = structlog.get_logger()
READS_SHOWN = 50  # the latest reads of the thread its page lists


def _version(text: str | None, head: int) -> int:
    if not text:
        return head
    try:
        version = int(text)
    except ValueError:
        raise Problem(422, f"Invalid version {text!r}: a whole number from 1 to {head}") from None
    if not 1 <= version <= head:
        raise Problem(422, f"Invalid version {version}: this thread has versions 1 to {head}")
    return version


def _thread_context(
    services: Services, viewer: Viewer, thread_id: str, version_text: str | None
) -> dict[str, Any]:
    head = head_version(services.store, thread_id)  # ThreadNotFoundError: 404
    version = _version(version_text, head)
    state = state_at_version(services.store, thread_id, version)
    diff = (
        diff_versions(services.store, thread_id, str(version - 1), str(version))
        if (version > 1)
        else None
    )
    services.read_models.catch_up_to_head()
    found = thread_timeline(services.store, thread_id, with_actors=viewer.may(Permission.AUDIT))
    return {
        "viewer": viewer,
        "thread_id": thread_id,
        "graph_id": state.graph_id,
        "status": "completed" if completed(found) else state.status,
        "head": head,
        "version": version,
        "state": state,
        "diff": diff,
        "timeline": with_payloads(found),
        "seal_reach": seal_reach(services.store, thread_id),
        "lineage": lineage(services.store, services.read_models.db, thread_id),
        "may_audit": viewer.may(Permission.AUDIT),
        "seal": _seal_status(services),
        "may_seal": may_seal(viewer),
        "seal_key": bool(os.environ.get(KEY_VARIABLE)),
        "legal_holds": holds_shown(
            Retention(services.store).holds(),
            thread_id,
            state.graph_id,
            _metadata(services, thread_id),
        ),
    }


def _seal_status(services: Services) -> dict[str, Any]:
    """What the evidence download can prove: the latest seal's position and time, or why
    there is none to prove it against."""
    try:
        seal = latest_seal(services.store)
    except SealFormatError as error:
        return {"problem": str(error)}
    if seal is None:
        return {"problem": None, "position": None}
    return {"problem": None, "position": seal.get("position"), "at": seal.get("sealed_at")}


def _metadata(services: Services, thread_id: str) -> dict[str, Any]:
    thread = services.store.thread(thread_id)
    return {} if thread is None else dict(thread.metadata)


@router.get("/threads/{thread_id}")
def thread_page(
    thread_id: str, request: Request, services: ServicesDep, viewer: ReadingViewer
) -> Response:
    context = _thread_context(services, viewer, thread_id, request.query_params.get("version"))
    read = Read("timeline", thread_id, "ui", thread_id=thread_id, graph_id=context["graph_id"])
    record_reads(services, viewer.principal, read)
    if context["may_audit"]:
        services.read_models.catch_up_to_head()
        context["reads"] = ReadRecords(services.read_models.db).latest(thread_id, READS_SHOWN)
        context["read_window"] = services.settings.read_window_seconds
    return render(request, "thread.html", **context)


@router.post("/threads/{thread_id}/evidence")
async def export_evidence(
    thread_id: str, request: Request, services: ServicesDep, viewer: AuditingViewer
) -> Response:
    """The evidence bundle `holdpoint export` writes without the seal key, as a download (so
    without a signed head: see docs/integrity.md); refused on a bad log."""
    form = await read_form(request)
    check_form(services, request, form, viewer.session.csrf_token, viewer.principal)
    bundle, problems = await run_in_threadpool(export_thread, services.store, thread_id)
    if bundle is None:
        lines = "; ".join(problem_line(problem) for problem in problems[:5])
        msg = f"Refused to export: the record failed its check ({lines}). Nothing was exported."
        raise Problem(409, msg)
    read = Read("export", thread_id, "ui", thread_id=thread_id)
    await run_in_threadpool(record_reads, services, viewer.principal, read)
    text = json.dumps(bundle, indent=2, ensure_ascii=False) + "\n"
    safe_name = "".join(c if c.isalnum() or c in "-_." else "_" for c in thread_id)[:80]
    return Response(
        text,
        media_type="application/json",
        headers={
            "Content-Disposition": f'attachment; filename="evidence-{safe_name}.json"',
            "Cache-Control": "no-store",
        },
    )


def may_seal(viewer: Viewer) -> bool:
    """Sealing the log is for admins, as `holdpoint seal` is for who holds the key."""
    return viewer.principal.role == "admin"


@router.post("/threads/{thread_id}/seal")
async def seal_first(
    thread_id: str, request: Request, services: ServicesDep, viewer: AuditingViewer
) -> Response:
    """Seal the whole log up to its head, as `holdpoint seal` does (`make_seal`: the log is
    verified first, and nothing is recorded on a problem), with the server's seal key
    (HOLDPOINT_SEAL_KEY); then back to the thread, whose evidence download now proves its
    events in the sealed log."""
    form = await read_form(request)
    check_form(services, request, form, viewer.session.csrf_token, viewer.principal)
    if not may_seal(viewer):
        principal = viewer.principal
        msg = f"Principal {principal.id!r} has role {principal.role!r}: only admin seals the log"
        raise await run_in_threadpool(refuse, services, request, principal, 403, "wrong_role", msg)
    await run_in_threadpool(head_version, services.store, thread_id)  # ThreadNotFoundError: 404
    try:
        key = load_private_key()
    except SealKeyError as error:
        raise Problem(503, f"Nothing was sealed: {error}") from None
    try:
        document, _, problems = await run_in_threadpool(
            partial(make_seal, services.store, key, actor=viewer.principal.as_actor())
        )
    except SealConflictError as error:
        raise Problem(409, f"Nothing was sealed: {error}") from None
    if document is None:
        lines = "; ".join(problem_line(problem) for problem in problems[:5])
        msg = f"Refused to seal: the log failed its check ({lines}). Nothing was recorded."
        raise Problem(409, msg)
    log.info("log sealed from the UI", principal=viewer.principal.id, position=document["position"])
    return RedirectResponse(f"/ui/threads/{quote(thread_id, safe='')}#chain", status_code=303)
