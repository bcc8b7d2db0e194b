"""Time travel and replay results as JSON, the same for the CLI's --json and HTTP."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from domain.engine.replay import Outcome, ReplayReport
from domain.history.time_travel import StateDiff, VersionEvent, VersionState

# Who acted is audit data (GET /threads/{id}/events, for auditors); readers see the rest.
AUDIT_ONLY = ("actor",)


def plain(value: Any) -> Any:
    """`value` with datetimes as ISO 8601 text and tuples as lists."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value


def event_json(event: VersionEvent, *, with_actor: bool = True) -> dict[str, Any]:
    data = {k: v for k, v in event.data.items() if with_actor or k not in AUDIT_ONLY}
    return {
        "version": event.version,
        "type": event.type,
        "at": event.timestamp.isoformat(),
        "checkpoint_id": event.checkpoint_id,
        "event_hash": event.event_hash,
        "prev_hash": event.prev_hash,
        "data": plain(data),
    }


def state_json(state: VersionState, *, with_actor: bool = True) -> dict[str, Any]:
    return {
        "thread_id": state.thread_id,
        "graph_id": state.graph_id,
        "version": state.version,
        "head": state.head,
        "status": state.status,
        "values": state.values,
        "next": state.next,
        "interrupts": state.interrupts,
        "checkpoint_id": state.checkpoint_id,
        "event": event_json(state.event, with_actor=with_actor),
    }


def diff_json(diff: StateDiff) -> dict[str, Any]:
    return {
        "thread_id": diff.thread_id,
        "from": diff.from_version,
        "to": diff.to_version,
        "changes": [
            {"key": c.key, "change": c.change, "old": c.old, "new": c.new} for c in diff.changes
        ],
        "next": {"from": diff.next_from, "to": diff.next_to},
        "status": {"from": diff.status_from, "to": diff.status_to},
    }


def outcome_json(outcome: Outcome | None) -> dict[str, Any] | None:
    return None if outcome is None else outcome.as_json()


def replay_json(report: ReplayReport) -> dict[str, Any]:
    return {
        "thread_id": report.thread_id,
        "graph_id": report.graph_id,
        "matches": report.matches,
        "digest": {
            "recorded": report.recorded_digest,
            "current": report.current_digest,
            "matches": report.digest_matches,
        },
        "steps": [
            {
                "version": step.version,
                "step": step.step,
                "node": step.node,
                "verdict": step.verdict,
                "detail": step.detail,
                "recorded": outcome_json(step.recorded),
                "replayed": outcome_json(step.replayed),
            }
            for step in report.steps
        ],
    }
