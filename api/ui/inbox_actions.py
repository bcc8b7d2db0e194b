"""The inbox's actions on one item or on a selection: assign, unassign, claim, and, where
the graph allows it, approve or reject.

Each goes through the API's own use case, item by item: an assignment through
`api.http.assignments.assign` (InterruptAssigned), a decision through
`api.http.decisions.decide`, with its own digest, its own idempotency key and every
rule and refusal of a decision made on its own. A decision in bulk is made only where
the interrupt declared `interrupt(..., bulk=True)` (domain/types.py); otherwise the
reviewer decides it on its own page. A decision from the inbox is approve or reject:
editing, responding and escalating are done on the decision page.

What became of each item is said on the inbox the browser is sent back to (post,
redirect, get): a count of what was recorded and, for each item left undecided, a
code from a fixed list (`NOT_DONE`), never text from the request.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fastapi import Request
from pydantic import ValidationError

from api.http.assignments import assign
from api.http.auth import throttle
from api.http.decisions import decide
from api.http.problems import Problem, from_domain_error
from api.http.schemas import DecisionBody
from api.ui.access import Viewer
from domain.errors import HoldpointError
from service.decisions import thread_of
from service.rate_limit import DECISIONS
from service.services import Services

ACTIONS = ("claim", "assign", "unassign", "approve", "reject")
DECIDING = ("approve", "reject")
MAX_SELECTED = 100
# Why an item was left as it was: each code's sentence on the inbox.
NOT_DONE = {
    "bulk": "its graph asks for it to be decided on its own page",
    "reason": "its graph asks for a reason: give one",
    "gone": "it is no longer open",
    "403": "you may not decide it (the refusal is on record)",
    "409": "it was already decided, or its question changed",
    "422": "the answer was not valid for it",
    "429": "too many decisions at once: try again in a moment",
}


@dataclass
class Outcome:
    """What an action did: the items it recorded, and those it left, each with why."""

    action: str
    done: int = 0
    not_done: list[tuple[str, str]] = field(default_factory=list)

    def query(self) -> dict[str, Any]:
        return {
            "done": self.action,
            "count": str(self.done),
            "left": [f"{interrupt_id}~{code}" for interrupt_id, code in self.not_done],
        }


def outcome_from_query(query: Any) -> Outcome | None:
    """The outcome an action sent the browser back with, if any (unknown codes dropped)."""
    action = query.get("done")
    if action not in ACTIONS:
        return None
    try:
        done = max(0, min(int(query.get("count") or 0), MAX_SELECTED))
    except ValueError:
        done = 0
    left = []
    for item in query.getlist("left")[:MAX_SELECTED]:
        interrupt_id, _, code = item.partition("~")
        if code in NOT_DONE and interrupt_id.isalnum():
            left.append((interrupt_id[:64], code))
    return Outcome(action, done, left)


def act(
    services: Services,
    request: Request,
    viewer: Viewer,
    action: str,
    selected: list[tuple[str, str | None]],
    form: dict[str, str],
) -> Outcome:
    """Do `action` to each selected (interrupt id, digest shown), one by one. A decision
    on a single item confirmed on its own (`alone`) is not a bulk one: the graph need not
    allow bulk for it."""
    outcome = Outcome(action)
    alone = form.get("alone") == "1" and len(selected) == 1
    for interrupt_id, digest in selected[:MAX_SELECTED]:
        try:
            if action in DECIDING:
                asked = (action, interrupt_id, digest, alone)
                code = _decide(services, request, viewer, asked, form)
            else:
                code = _assign(services, request, viewer, action, interrupt_id, form)
        except (Problem, HoldpointError) as error:  # a refusal is on record already
            problem = error if isinstance(error, Problem) else from_domain_error(error)
            code = "gone" if problem.status == 404 else str(problem.status)
            code = code if code in NOT_DONE else "422"
        if code is None:
            outcome.done += 1
        else:
            outcome.not_done.append((interrupt_id, code))
    return outcome


def _assign(
    services: Services,
    request: Request,
    viewer: Viewer,
    action: str,
    interrupt_id: str,
    form: dict[str, str],
) -> str | None:
    reviewer = {"claim": viewer.principal.id, "unassign": None}.get(action, form.get("reviewer"))
    if action == "assign" and not reviewer:
        raise Problem(422, "Choose whom to assign the items to")
    assign(services, request, viewer.principal, interrupt_id, reviewer or None)
    return None


def _decide(
    services: Services,
    request: Request,
    viewer: Viewer,
    asked: tuple[str, str, str | None, bool],
    form: dict[str, str],
) -> str | None:
    decision, interrupt_id, digest, alone = asked
    thread = services.store.thread(thread_of(services, interrupt_id))
    record = thread.interrupts.get(interrupt_id) if thread is not None else None
    if record is None:
        return "gone"
    if not alone and not record.get("bulk"):
        return "bulk"
    reason = form.get("reason", "").strip() or None
    if record.get("reason_required") and reason is None:
        return "reason"
    try:
        fields = {"decision": decision, "reason": reason, "payload_digest": digest or None}
        body = DecisionBody.model_validate(fields)
    except ValidationError:
        return "422"
    throttle(services, request, viewer.principal, DECISIONS)
    key = form.get("idempotency_key")
    key = f"{key}:{interrupt_id}"[:255] if key else None  # one per item: a resend records none
    decide(services, request, viewer.principal, interrupt_id, body, key)
    return None
