"""What a decision page's form recorded, read back from the thread, and what comes next.

After a decision (or a cancel) the browser is sent, with a 303, to a page that reads
the event back from the store by its version in the thread: what the reviewer sees
there is what is on record, its hash in the chain included, and reloading it records
nothing again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from api.ui.access import Viewer
from api.ui.decidable import refusal
from domain.record.thread import WorkflowThread
from projections.pending_approvals import PendingApproval, PendingApprovals
from service.decisions import decision_of
from service.services import Services
from service.wire import iso

NEXT_WINDOW = 50  # open interrupts looked through, oldest first, for one the viewer may decide
RECORDED = (
    WorkflowThread.InterruptResumed,
    WorkflowThread.InterruptApproved,
    WorkflowThread.ThreadCancelled,
)


@dataclass(frozen=True)
class Recorded:
    """One recorded answer or cancel: its kind, reason, time, who, and place in the chain."""

    kind: str  # approve, reject, edit, respond, escalate, or cancel
    reason: str | None
    at: str
    by: dict[str, Any]
    version: int
    event_hash: str | None
    event: str  # its type's name
    approvals: tuple[int, int] | None = None  # an approval short of those needed: (given, needed)


def recorded_event(
    services: Services, thread_id: str, interrupt_id: str, version: int
) -> Recorded | None:
    """The answer to `interrupt_id` (or the cancel of its thread) at `version`, or None."""
    for event in services.store.thread_events(thread_id, gt=version - 1, lte=version):
        if not isinstance(event, RECORDED):
            continue
        cancel = isinstance(event, WorkflowThread.ThreadCancelled)
        if not cancel and getattr(event, "interrupt_id", None) != interrupt_id:
            continue
        actor = event.actor or {}
        approvals = None
        if isinstance(event, WorkflowThread.InterruptApproved):
            approvals = (event.approvals, event.needed)
        return Recorded(
            kind="cancel" if cancel else decision_of(event),
            reason=event.reason,
            at=iso(event.timestamp) or "",
            by={"id": actor.get("id"), "role": actor.get("role")},
            version=event.originator_version,
            event_hash=event.event_hash,
            event=type(event).__name__,
            approvals=approvals,
        )
    return None


def raised_node(services: Services, thread_id: str, interrupt_id: str) -> str | None:
    """The node that raised `interrupt_id`, open or not."""
    for event in services.store.thread_events(thread_id):
        if isinstance(event, WorkflowThread.InterruptRaised) and event.interrupt_id == interrupt_id:
            return str(event.node)
    return None


def thread_status(services: Services, thread: WorkflowThread) -> str:
    """Its status, "completed" when its last event says it ran to its end."""
    last = services.store.thread_events(thread.thread_id, gt=thread.version - 1)
    if last and isinstance(last[-1], WorkflowThread.ThreadCompleted):
        return "completed"
    return thread.status


def next_in_queue(services: Services, viewer: Viewer, done: str) -> PendingApproval | None:
    """The oldest open interrupt other than `done` that `viewer` may decide, among the
    oldest NEXT_WINDOW."""
    services.read_models.catch_up_to_head()
    page = PendingApprovals(services.read_models.db).page(limit=NEXT_WINDOW)
    for item in page.items:
        if item.interrupt_id == done:
            continue
        thread = services.store.thread(item.thread_id)
        if thread is None or item.interrupt_id not in thread.interrupts:
            continue
        if refusal(services, viewer, thread, item.interrupt_id) is None:
            return item
    return None
