"""A thread's events as an auditor reads them: who did what, when, chained by hash."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Any

from domain.oversight.reviews import review_of, review_outcome
from domain.record.application import Workflows
from domain.record.thread import WorkflowThread
from service.wire import iso

# event name -> the fields an auditor reads (the actor and the hashes are shown for all)
DETAILS: dict[str, tuple[str, ...]] = {
    "ThreadStarted": ("graph_id", "graph_digest", "metadata"),
    "ThreadForked": ("graph_id", "source_thread_id", "source_version", "source_hash", "run_id"),
    "InputReceived": ("run_id", "input"),
    "NodeCompleted": ("step", "node", "update", "routes", "duration_ms", "applied"),
    "NodeFailed": ("step", "node", "error_type", "message"),
    "InterruptRaised": (
        "step",
        "node",
        "interrupt_id",
        "value",
        "digest",
        "required_role",
        "due_by",
        "approvals",
        "reasked",
    ),
    "InterruptResumed": (
        "interrupt_id",
        "decision",
        "resume",
        "reason",
        "digest",
        "separation_of_duties",
        "idempotency_key",
        "run_id",
    ),
    "InterruptApproved": (
        "interrupt_id",
        "reason",
        "digest",
        "approvals",
        "needed",
        "separation_of_duties",
        "idempotency_key",
    ),
    "InterruptExpired": ("interrupt_id", "due_by", "rule", "new_due_by"),
    "InterruptAssigned": ("interrupt_id", "reviewer_id"),
    "StateEdited": ("values", "as_node", "reason", "decision", "separation_of_duties"),
    "RunReclaimed": ("run_id", "runner", "previous_runner", "lease_expired_at", "attempt", "nodes"),
    "RunCancelled": ("step", "run_id", "reason"),
    "MetadataUpdated": ("metadata",),
    "ThreadCompleted": ("step",),
    "ThreadFailed": ("step", "error_type", "message"),
    "ThreadCancelled": ("step", "reason"),
    # A real LangGraph graph's (HoldpointSaver)
    "CheckpointSaved": ("namespace", "checkpoint_id", "parent_id", "source", "step", "next"),
    "WritesSaved": ("namespace", "checkpoint_id", "task_id", "task_path"),
    "InterruptSuperseded": ("interrupt_id", "reason"),
}


def summary(event: WorkflowThread.Event) -> str:
    """One sentence on what an event records."""
    actor = getattr(event, "actor", None) or {}
    who = actor.get("id") or "someone"
    match event:
        case WorkflowThread.ThreadStarted():
            return f"{who} started the thread on graph {event.graph_id!r}"
        case WorkflowThread.ThreadForked():
            return (
                f"{who} forked it from {event.source_thread_id!r} at version {event.source_version}"
            )
        case WorkflowThread.InputReceived():
            return f"{who} sent input (run {event.run_id})"
        case WorkflowThread.NodeCompleted():
            return f"node {event.node!r} completed, next: {', '.join(event.routes) or 'end'}"
        case WorkflowThread.NodeFailed():
            return f"node {event.node!r} failed: {event.error_type}: {event.message}"
        case WorkflowThread.InterruptRaised():
            role = f" (for role {event.required_role})" if event.required_role else ""
            again = f", again in place of {event.reasked}" if event.reasked else ""
            return f"node {event.node!r} asked a human{role}: interrupt {event.interrupt_id}{again}"
        case WorkflowThread.InterruptResumed():
            role = f" ({actor.get('role')})" if actor.get("role") else ""
            reason = f": {event.reason}" if event.reason else ""
            return f"{who}{role} decided {event.decision} on {event.interrupt_id}{reason}"
        case WorkflowThread.InterruptApproved():
            role = f" ({actor.get('role')})" if actor.get("role") else ""
            return (
                f"{who}{role} approved {event.interrupt_id}: {event.approvals} of "
                f"{event.needed} approvals"
            )
        case WorkflowThread.InterruptExpired():
            return (
                f"interrupt {event.interrupt_id} passed its deadline ({event.rule.get('action')})"
            )
        case WorkflowThread.InterruptAssigned():
            if event.reviewer_id is None:
                return f"{who} took the reviewer off {event.interrupt_id}"
            return f"{who} assigned {event.interrupt_id} to {event.reviewer_id}"
        case WorkflowThread.StateEdited():
            if event.decision == "edit":
                return f"{who} decided the flow: edited the state as node {event.as_node!r}"
            return f"{who} edited the state"
        case WorkflowThread.RunReclaimed():
            return (
                f"runner {event.runner} took run {event.run_id} over from "
                f"{event.previous_runner}, whose lease expired; again: {', '.join(event.nodes)}"
            )
        case WorkflowThread.MetadataUpdated():
            return f"{who} set metadata {', '.join(sorted(event.metadata))}"
        case WorkflowThread.RunCancelled():
            because = f": {event.reason}" if event.reason else ""
            return (
                f"{who} cancelled run {event.run_id}; it stopped after step {event.step}{because}"
            )
        case WorkflowThread.ThreadCompleted():
            return "the run reached the end"
        case WorkflowThread.ThreadFailed():
            return f"the run failed: {event.error_type}: {event.message}"
        case WorkflowThread.ThreadCancelled():
            return f"{who} cancelled the thread" + (f": {event.reason}" if event.reason else "")
        case WorkflowThread.CheckpointSaved():
            where = f" in {event.namespace}" if event.namespace else ""
            return (
                f"checkpoint {event.checkpoint_id} saved{where} ({event.source}, step {event.step})"
            )
        case WorkflowThread.WritesSaved():
            channels = ", ".join(dict.fromkeys(str(write[0]) for write in event.writes))
            return f"writes saved on checkpoint {event.checkpoint_id}: {channels}"
        case WorkflowThread.InterruptSuperseded():
            return f"interrupt {event.interrupt_id} left unanswered: {event.reason}"
    return type(event).__name__


def _reviewed(event: WorkflowThread.Event, asked: dict[str, Any]) -> dict[str, Any]:
    """For an answer to a review of an agent's tool calls: each action, as proposed and as
    decided (an edit's arguments, a reject's message)."""
    if not isinstance(event, WorkflowThread.InterruptResumed) or event.interrupt_id not in asked:
        return {}
    review = review_of(*asked[event.interrupt_id])
    return {} if review is None else {"actions": review_outcome(review, event.resume)}


def timeline(store: Workflows, thread_id: str) -> dict[str, Any]:
    entries = []
    graph_id = None
    asked: dict[str, tuple[Any, Any]] = {}  # interrupt id -> (payload, response schema)
    for event in store.thread_events(thread_id):
        name = type(event).__name__
        graph_id = getattr(event, "graph_id", graph_id)
        actor = getattr(event, "actor", None)
        if isinstance(event, WorkflowThread.InterruptRaised):
            asked[event.interrupt_id] = (event.value, (event.task or {}).get("response_schema"))
        details = {field: getattr(event, field, None) for field in DETAILS.get(name, ())}
        entries.append(
            {
                "version": event.originator_version,
                "at": iso(event.timestamp),
                "event": name,
                "actor": actor,
                "summary": summary(event),
                "details": {**details, **_reviewed(event, asked)},
                "prev_hash": event.prev_hash,
                "event_hash": event.event_hash,
            }
        )
    report = store.verify_chain(thread_id)
    return {
        "thread_id": thread_id,
        "graph_id": graph_id,
        "chain": asdict(report),
        "entries": entries,
    }


def jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {key: jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(item) for item in value]
    return value


def recorded_events(store: Workflows, thread_id: str, after: int, limit: int) -> dict[str, Any]:
    """The thread's events as stored (before any upcasting), from version `after + 1`."""
    records = [r for r in store.recorded_events(thread_id) if r.version > after]
    page = records[:limit]
    events = []
    for record in page:
        state = jsonable(record.state)
        events.append(
            {
                "version": record.version,
                "type": record.name,
                "timestamp": state.pop("timestamp", None),
                "prev_hash": state.pop("prev_hash", None),
                "event_hash": state.pop("event_hash", None),
                "data": {k: v for k, v in state.items() if k != "originator_topic"},
            }
        )
    more = len(records) > limit
    return {
        "thread_id": thread_id,
        "events": events,
        "next_after": page[-1].version if more and page else None,
    }
