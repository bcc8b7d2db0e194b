"""Recompute a thread's hash chain and name the first broken link.

The hash of an event covers its fields as they were recorded. Events read
back through upcasters (a newer class_version) no longer have that shape, so
`verify_thread` checks the records as stored; `verify_chain` checks event
objects in hand (recorded by this code, or read without upcasting).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from domain.record.hashing import GENESIS_HASH, event_hash

_NOT_HASHED = frozenset(
    {"timestamp", "prev_hash", "event_hash", "originator_topic", "class_version"}
)


@dataclass(frozen=True)
class RecordedEvent:
    """One event as recorded: its version, its type's name and its stored state."""

    version: int
    name: str
    state: dict[str, Any]


@dataclass(frozen=True)
class ChainReport:
    """The outcome of checking one thread's chain."""

    thread_id: str
    events_checked: int
    ok: bool
    broken_at: int | None = None
    problem: str | None = None


def as_recorded(event: Any) -> RecordedEvent:
    state = {
        key: value
        for key, value in vars(event).items()
        if key not in ("originator_id", "originator_version")
    }
    return RecordedEvent(event.originator_version, type(event).__name__, state)


def hashed_fields(record: RecordedEvent) -> dict[str, Any]:
    return {key: value for key, value in record.state.items() if key not in _NOT_HASHED}


def recompute_hash(event: Any, thread_id: str) -> str:
    """The hash an event (object or RecordedEvent) must carry."""
    record = event if isinstance(event, RecordedEvent) else as_recorded(event)
    return event_hash(
        record.name,
        thread_id,
        record.version,
        record.state["timestamp"],
        record.state["prev_hash"],
        hashed_fields(record),
    )


def verify_chain(events: Iterable[Any], thread_id: str | None = None) -> ChainReport:
    """Check event objects: each one's hash, its link to the one before, its version."""
    return verify_records((as_recorded(event) for event in events), thread_id)


def verify_records(records: Iterable[RecordedEvent], thread_id: str | None) -> ChainReport:
    expected_prev = GENESIS_HASH
    count = 0
    for count, record in enumerate(records, start=1):
        thread_id = thread_id or record.state.get("thread_id") or "?"
        version, state = record.version, record.state
        if version != count:
            problem = f"expected version {count}, found {version}: an event is missing or moved"
            return ChainReport(thread_id, count, False, version, problem)
        if state.get("prev_hash") != expected_prev:
            problem = "prev_hash does not match the hash of the event before it"
            return ChainReport(thread_id, count, False, version, problem)
        if recompute_hash(record, thread_id) != state.get("event_hash"):
            problem = "the event's content does not match its hash (altered)"
            return ChainReport(thread_id, count, False, version, problem)
        expected_prev = state["event_hash"]
    return ChainReport(thread_id or "?", count, True)
