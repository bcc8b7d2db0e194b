"""Recompute a thread's hash chain and name the first broken link."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from domain.hashing import GENESIS_HASH, event_hash
from domain.thread import WorkflowThread

_NOT_HASHED = frozenset(
    {
        "originator_id",
        "originator_version",
        "timestamp",
        "prev_hash",
        "event_hash",
        "originator_topic",
    }
)


@dataclass(frozen=True)
class ChainReport:
    """The outcome of checking one thread's chain."""

    thread_id: str
    events_checked: int
    ok: bool
    broken_at: int | None = None
    problem: str | None = None


def hashed_fields(event: Any) -> dict[str, Any]:
    return {
        f.name: getattr(event, f.name)
        for f in dataclasses.fields(event)
        if f.name not in _NOT_HASHED
    }


def recompute_hash(event: Any, thread_id: str) -> str:
    return event_hash(
        type(event).__name__,
        thread_id,
        event.originator_version,
        event.timestamp,
        event.prev_hash,
        hashed_fields(event),
    )


def verify_chain(
    events: Iterable[WorkflowThread.Event], thread_id: str | None = None
) -> ChainReport:
    """Check every event's own hash, its link to the one before, and its version."""
    expected_prev = GENESIS_HASH
    count = 0
    for count, event in enumerate(events, start=1):
        if thread_id is None:
            thread_id = getattr(event, "thread_id", None) or "?"
        version = event.originator_version
        if version != count:
            return ChainReport(
                thread_id,
                count,
                False,
                version,
                f"expected version {count}, found {version}: an event is missing or out of order",
            )
        if event.prev_hash != expected_prev:
            return ChainReport(
                thread_id,
                count,
                False,
                version,
                "prev_hash does not match the hash of the event before it",
            )
        actual = recompute_hash(event, thread_id)
        if actual != event.event_hash:
            return ChainReport(
                thread_id,
                count,
                False,
                version,
                "the event's content does not match its hash (altered)",
            )
        expected_prev = event.event_hash
    return ChainReport(thread_id or "?", count, True)
