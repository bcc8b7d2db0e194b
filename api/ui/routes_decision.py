"""One interrupt: what it asks, the thread so far, the deadline, and the decisions offered.

A decision goes through the use case `service.decisions.decide`, as `POST
/approvals/{interrupt_id}/decision` does (through `api.http.decisions`): the same
roles, separation of duties, one winner among concurrent answers, idempotency and
refusals on record. The form carries the digest of the payload the page showed, so
that a decision is made on that question or refused (409). The page offers only what
the viewer may do (`api.ui.decision_offer`); a decision recorded, the browser is sent
(303) to the page that reads it back (`routes_recorded`), so a reload sends nothing.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from api.http.auth import Permission, throttle
from api.http.decisions import decide
from api.http.deps import ServicesDep
from api.http.problems import Problem, from_domain_error
from api.http.reads import record_reads
from api.http.schemas import DecisionBody
from api.ui import routes_recorded
from api.ui.access import CancellingViewer, DecidingViewer, QueueViewer, Viewer
from api.ui.decidable import refusal
from api.ui.decision_offer import KINDS, LABELS, offer, who_may_decide
from api.ui.decision_record import raised_node
from api.ui.forms import check_form, read_form
from api.ui.pages import PageRoute, render
from api.ui.review_cards import CARD_LABELS, answer_of, cards
from api.ui.schema_form import SchemaFormError, as_posted, edit_form, value_of
from api.ui.thread_timeline import completed, thread_timeline
from domain.errors import HoldpointError
from domain.oversight.hold_points import NO_VALUE, record_digest, review_in
from domain.oversight.read_log import Read
from service import cancellation
from service.decisions import fate, thread_of
from service.errors import InterruptNeverRaisedError
from service.rate_limit import DECISIONS
from service.services import Services

router = APIRouter(route_class=PageRoute)
router.include_router(routes_recorded.router)
RUN_WAIT_SECONDS = 10.0  # how long a decision waits for its node to run, to show the outcome


def reason_required(record: dict[str, Any] | None) -> bool:
    """Whether the graph asks for a reason: `interrupt(..., reason_required=True)`."""
    return record is not None and bool(record.get("reason_required"))


def _thread_id(services: Services, interrupt_id: str) -> str:
    try:
        return thread_of(services, interrupt_id)
    except InterruptNeverRaisedError as error:
        raise Problem(404, f"{error} (see the inbox)") from None


def seconds_left(due_by: str | None) -> float | None:
    """Seconds until the deadline (negative once passed), as the page is rendered."""
    if not due_by:
        return None
    due = datetime.fromisoformat(due_by)
    return (due.replace(tzinfo=due.tzinfo or UTC) - datetime.now(UTC)).total_seconds()


def _page_context(services: Services, viewer: Viewer, interrupt_id: str) -> dict[str, Any]:
    thread_id = _thread_id(services, interrupt_id)
    thread = services.store.thread(thread_id)
    if thread is None:
        raise Problem(404, f"No thread {thread_id!r}")
    record = thread.interrupts.get(interrupt_id)
    outcome, members = (None, {}) if record is not None else fate(services, thread_id, interrupt_id)
    payload = record["value"] if record is not None else None
    found = thread_timeline(services.store, thread_id, with_actors=viewer.may(Permission.AUDIT))
    offered = None
    if record is not None:
        offered = offer(record, viewer, refusal(services, viewer, thread, interrupt_id))
    return {
        "viewer": viewer,
        "interrupt_id": interrupt_id,
        "thread_id": thread_id,
        "graph_id": thread.graph_id,
        "node": record["node"] if record else raised_node(services, thread_id, interrupt_id),
        "status": "completed" if completed(found) else thread.status,
        "record": record,
        "payload": payload,
        "outcome": outcome,
        "outcome_members": members,
        "timeline": found,
        "offer": offered,
        "edit": edit_form(record) if record else None,
        "cards": cards(offered.review) if offered and offered.review else [],
        "card_labels": CARD_LABELS,
        "labels": LABELS,
        "who_may_decide": who_may_decide(record) if record else None,
        "seconds_left": seconds_left(record.get("due_by")) if record else None,
        "reason_required": reason_required(record),
        "idempotency_key": f"ui-{secrets.token_hex(16)}",
        # What the reviewer is shown: a decision is made on this payload, or refused (409)
        "payload_digest": record_digest(record) if record is not None else None,
        "form": {"reason": "", "resume": "", "response": ""},
        "error": None,
    }


@router.get("/approvals/{interrupt_id}")
def decision_page(
    interrupt_id: str, request: Request, services: ServicesDep, viewer: QueueViewer
) -> Response:
    context = _page_context(services, viewer, interrupt_id)
    thread_id, graph_id = context["thread_id"], context["graph_id"]
    shown = Read("payload", interrupt_id, "ui", thread_id, interrupt_id, graph_id)
    record_reads(services, viewer.principal, shown)
    return render(request, "decision.html", **context)


def _json_value(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        msg = (
            f"{what} is not valid JSON: {error.msg} at line {error.lineno}, "
            f"column {error.colno}. Nothing was recorded; correct it and send again."
        )
        raise Problem(422, msg) from None


def edited_value(form: dict[str, str], record: dict[str, Any] | None) -> Any:
    """The value of an edit: its schema form's fields read back and checked against the
    interrupt's schema, or the JSON it was written as."""
    if form.get("edit_form") != "fields":
        return _json_value(form.get("resume", ""), "The edited value")
    edit = edit_form(record) if record is not None else None
    if edit is None:
        raise Problem(422, "This interrupt's edit is written as JSON: nothing was recorded")
    try:
        return value_of(form, edit)
    except SchemaFormError as error:
        msg = f"The edited value was not recorded: {error}. Correct it and send again."
        raise Problem(422, msg) from None


def body_of(
    form: dict[str, str], needs_reason: bool, record: dict[str, Any] | None = None
) -> DecisionBody:
    """The decision the form asks for, as the API's body; 422 with a clear sentence if not."""
    decision = form.get("decision", "")
    review = review_in(record) if record is not None else None
    resume: Any = NO_VALUE
    if decision == "review" and review is not None:  # the cards: one decision per action
        decision, resume = answer_of(review, form)
    if decision not in KINDS:
        raise Problem(422, f"Choose a decision: {', '.join(KINDS)}")
    reason = form.get("reason", "").strip()
    if needs_reason and not reason:
        msg = f"Give a reason: this graph asks for one ({decision} was not recorded)"
        raise Problem(422, msg)
    fields: dict[str, Any] = {"decision": decision, "reason": reason or None}
    if form.get("payload_digest"):
        fields["payload_digest"] = form["payload_digest"]
    if resume is not NO_VALUE:
        fields["resume"] = resume
    elif decision == "edit":
        fields["resume"] = edited_value(form, record)
    elif decision == "respond":
        response = form.get("response", "").strip()
        if not response:
            raise Problem(422, "Write the response the node gets: nothing was recorded")
        fields["resume"] = response
    try:
        return DecisionBody(**fields)
    except ValidationError as error:
        details = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
        raise Problem(422, f"Invalid decision: {details}") from None


def _decide(
    services: Services,
    request: Request,
    viewer: Viewer,
    interrupt_id: str,
    form: dict[str, str],
) -> str:
    """Throttled and decided as the API does; waits a little for the node to run again.
    The page that shows what was recorded."""
    thread_id = _thread_id(services, interrupt_id)
    thread = services.store.thread(thread_id)
    record = thread.interrupts.get(interrupt_id) if thread is not None else None
    body = body_of(form, reason_required(record), record)
    throttle(services, request, viewer.principal, DECISIONS)
    key = form.get("idempotency_key") or None
    answer, _position = decide(services, request, viewer.principal, interrupt_id, body, key)
    run = services.runs.local(answer["run_id"]) if answer.get("run_id") else None
    if run is not None:
        run.wait_blocking(RUN_WAIT_SECONDS)
    return routes_recorded.recorded_url(interrupt_id, answer["event"]["version"])


@router.post("/approvals/{interrupt_id}/decision")
async def post_decision(
    interrupt_id: str, request: Request, services: ServicesDep, viewer: DecidingViewer
) -> Response:
    form = await read_form(request)
    check_form(services, request, form, viewer.session.csrf_token, viewer.principal)
    try:
        shown = await run_in_threadpool(_decide, services, request, viewer, interrupt_id, form)
    except (Problem, HoldpointError) as error:  # a refusal is the domain's, recorded
        problem = error if isinstance(error, Problem) else from_domain_error(error)
        if problem.status == 404:
            raise
        context = await run_in_threadpool(_page_context, services, viewer, interrupt_id)
        if context["record"] is not None:  # still open: keep what was typed
            context["form"] = {k: form.get(k, "") for k in ("reason", "resume", "response")}
            edit = context["edit"]
            if edit is not None and form.get("edit_form") == "fields":
                context["edit"] = replace(edit, root=as_posted(edit.root, form))
        context["error"] = problem.detail
        return render(request, "decision.html", status_code=problem.status, **context)
    return RedirectResponse(shown, status_code=303)


def _cancel(services: Services, viewer: Viewer, interrupt_id: str, reason: str) -> str:
    """Stop the interrupt's thread for good, as `POST /threads/{id}/cancel` does (Art.
    14(4)(e)): `Workflows.cancel`, which needs a reason. The page that shows it."""
    thread_id = _thread_id(services, interrupt_id)
    cancellation.cancel_thread(services, thread_id, viewer.principal.as_actor(), reason or None)
    thread = services.store.thread(thread_id)
    assert thread is not None, "a thread just cancelled is on record"
    return routes_recorded.recorded_url(interrupt_id, thread.version)


@router.post("/approvals/{interrupt_id}/cancel")
async def post_cancel(
    interrupt_id: str, request: Request, services: ServicesDep, viewer: CancellingViewer
) -> Response:
    form = await read_form(request)
    check_form(services, request, form, viewer.session.csrf_token, viewer.principal)
    reason = form.get("cancel_reason", "").strip()
    try:
        shown = await run_in_threadpool(_cancel, services, viewer, interrupt_id, reason)
    except (Problem, HoldpointError) as error:
        problem = error if isinstance(error, Problem) else from_domain_error(error)
        if problem.status == 404:
            raise
        context = await run_in_threadpool(_page_context, services, viewer, interrupt_id)
        context["error"] = problem.detail
        return render(request, "decision.html", status_code=problem.status, **context)
    return RedirectResponse(shown, status_code=303)
