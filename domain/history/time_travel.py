"""Time travel, read-only: a thread at any version or past moment, and what changed.

A thread's version N is its N-th event; the state at version N is the fold of
its first N events (through the thread's snapshots, so a version in the
middle of a long thread costs about as much as a short thread). A checkpoint
is the subset of versions LangGraph's history lists (see `domain.history.state_snapshots`);
every version can be read, and `resolve_version` takes either a version
number or a checkpoint id. Nothing here runs a graph's code or writes to the
store: everything comes from the recorded events.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from domain.errors import CheckpointNotFoundError, HoldpointError, ThreadNotFoundError
from domain.history.state_snapshots import checkpoint_id, load_checkpoint
from domain.record.application import Workflows
from domain.record.thread import WorkflowThread
from domain.record.thread_uuids import thread_uuid

# The bookkeeping every event carries; the rest of its attributes are its own fields.
_ENVELOPE = frozenset(
    {"originator_id", "originator_version", "originator_topic", "timestamp", "prev_hash",
     "event_hash"}
)  # fmt: skip


class VersionNotFoundError(HoldpointError, LookupError):
    """A version number outside the thread's recorded versions."""

    def __init__(self, thread_id: str, version: int, head: int) -> None:
        super().__init__(
            f"Thread {thread_id!r} has versions 1 to {head}; there is no version {version}"
        )
        self.thread_id = thread_id
        self.version = version
        self.head = head


class NotYetStartedError(HoldpointError, LookupError):
    """A moment before the thread's first event."""

    def __init__(self, thread_id: str, moment: datetime, first: datetime) -> None:
        super().__init__(
            f"Thread {thread_id!r} did not exist at {moment.isoformat()}; "
            f"its first event was recorded at {first.isoformat()}"
        )
        self.thread_id = thread_id


@dataclass(frozen=True)
class VersionEvent:
    """The event recorded at one version, with its place in the hash chain."""

    version: int
    type: str
    timestamp: datetime
    event_hash: str
    prev_hash: str
    data: dict[str, Any]
    checkpoint_id: str | None = None  # set when this event made a checkpoint

    @classmethod
    def of(cls, event: WorkflowThread.Event, checkpoint: str | None = None) -> VersionEvent:
        data = {key: value for key, value in vars(event).items() if key not in _ENVELOPE}
        return cls(
            version=event.originator_version,
            type=type(event).__name__,
            timestamp=event.timestamp,
            event_hash=event.event_hash,
            prev_hash=event.prev_hash,
            data=data,
            checkpoint_id=checkpoint,
        )


@dataclass(frozen=True)
class VersionState:
    """A thread as it stood right after the event at `version` was recorded."""

    thread_id: str
    graph_id: str
    version: int
    head: int
    status: str
    values: dict[str, Any]
    next: list[str]
    interrupts: list[dict[str, Any]]
    checkpoint_id: str | None  # the latest checkpoint at or before this version
    event: VersionEvent


@dataclass(frozen=True)
class KeyChange:
    """One state key that differs between two versions."""

    key: str
    change: str  # "added", "removed" or "changed"
    old: Any = None
    new: Any = None


@dataclass(frozen=True)
class StateDiff:
    """What changed in a thread's state from one version to another."""

    thread_id: str
    from_version: int
    to_version: int
    changes: list[KeyChange]
    next_from: list[str] = field(default_factory=list)
    next_to: list[str] = field(default_factory=list)
    status_from: str = ""
    status_to: str = ""

    @property
    def changed_keys(self) -> list[str]:
        return [change.key for change in self.changes]


@dataclass(frozen=True)
class ForkOrigin:
    """Where a forked thread came from: the source thread, version and event hash."""

    thread_id: str
    version: int
    event_hash: str
    forked_at: datetime


# -- versions --------------------------------------------------------------


def head_version(store: Workflows, thread_id: str) -> int:
    """The thread's latest version; ThreadNotFoundError if it was never recorded."""
    last = store.recorder.select_events(thread_uuid(thread_id), desc=True, limit=1)  # not decoded
    if not last:
        raise ThreadNotFoundError(thread_id)
    return int(last[0].originator_version)


def event_at(store: Workflows, thread_id: str, version: int) -> WorkflowThread.Event:
    """The event recorded at `version`; VersionNotFoundError outside 1..head."""
    events = store.thread_events(thread_id, gt=version - 1, lte=version) if version > 0 else []
    if not events:
        raise VersionNotFoundError(thread_id, version, head_version(store, thread_id))
    return events[0]


def resolve_version(store: Workflows, thread_id: str, ref: str | int) -> int:
    """A version from a version number ("7") or a checkpoint id of this thread (for a real
    LangGraph graph's thread, LangGraph's id for it too)."""
    head = head_version(store, thread_id)
    text = str(ref).strip()
    if not text.isdigit():
        try:
            return load_checkpoint(store, thread_id, text).version
        except CheckpointNotFoundError:
            version = _langgraph_checkpoint_version(store, thread_id, text)
            if version is None:
                raise
            return version
    version = int(text)
    if not 1 <= version <= head:
        raise VersionNotFoundError(thread_id, version, head)
    return version


def version_at(store: Workflows, thread_id: str, moment: datetime) -> int:
    """The last version recorded at or before `moment` (UTC when it has no offset).

    Finds it by bisection over the events' timestamps: a few one-event reads,
    however long the thread.
    """
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    head = head_version(store, thread_id)
    found = bisect_right(
        range(1, head + 1),
        moment,
        key=lambda version: event_at(store, thread_id, version).timestamp,
    )
    if found == 0:
        first = event_at(store, thread_id, 1).timestamp
        raise NotYetStartedError(thread_id, moment, first)
    return found


def versions(store: Workflows, thread_id: str) -> list[VersionEvent]:
    """Every version's event, oldest first, each checkpoint with its id."""
    found: list[VersionEvent] = []
    thread: WorkflowThread | None = None
    for event in store.iter_thread_events(thread_id):
        thread = event.mutate(thread)
        assert thread is not None
        found.append(VersionEvent.of(event, _checkpoint_made(thread, event)))
    if not found:
        raise ThreadNotFoundError(thread_id)
    return found


def _checkpoint_made(thread: WorkflowThread, event: WorkflowThread.Event) -> str | None:
    checkpoint = thread.checkpoint
    if checkpoint is None or checkpoint["version"] != event.originator_version:
        return None
    return shown_checkpoint_id(checkpoint)


def shown_checkpoint_id(checkpoint: dict[str, Any]) -> str:
    """The id a checkpoint goes by: LangGraph's own for a real LangGraph graph's thread
    (what its `get_state_history` lists), else Holdpoint's (its version and hash)."""
    return str(checkpoint.get("id") or checkpoint_id(checkpoint["version"], checkpoint["hash"]))


def _langgraph_checkpoint_version(store: Workflows, thread_id: str, wanted: str) -> int | None:
    """The version of a real LangGraph graph's thread that saved its root checkpoint
    `wanted` (LangGraph's id for it), if one did."""
    for event in store.iter_thread_events(thread_id):
        if (
            isinstance(event, WorkflowThread.CheckpointSaved)
            and event.namespace == ""
            and event.checkpoint_id == wanted
        ):
            return int(event.originator_version)
    return None


# -- state at a version or a moment ----------------------------------------


def state_at_version(store: Workflows, thread_id: str, version: int | None = None) -> VersionState:
    """The thread right after `version` (default: its latest version).

    One query on the SQL stores however long the thread (`Workflows.read_at`):
    its latest snapshot at or before `version`, the events from there to
    `version` (the last of which is the version's own event), and its head.
    Without `version`, the head is read first.
    """
    if version is None:
        version = head_version(store, thread_id)
    read = store.read_at(thread_id, version, head=True)
    head = read.head or 0
    if read.found is None:
        if not head:
            raise ThreadNotFoundError(thread_id)
        raise VersionNotFoundError(thread_id, version, head)
    thread, event = read.found.thread, read.found.event
    checkpoint = thread.checkpoint
    return VersionState(
        thread_id=thread_id,
        graph_id=thread.graph_id,
        version=version,
        head=head,
        status=thread.status,
        values=thread.current_values(),
        next=thread.pending_nodes(),
        interrupts=[
            {"id": interrupt_id, "node": record["node"], "value": record["value"]}
            for interrupt_id, record in thread.interrupts.items()
        ],
        checkpoint_id=None if checkpoint is None else shown_checkpoint_id(checkpoint),
        event=VersionEvent.of(event, _checkpoint_made(thread, event)),
    )


def state_at_time(store: Workflows, thread_id: str, moment: datetime) -> VersionState:
    """The thread as it stood at `moment`: after the last event recorded by then."""
    return state_at_version(store, thread_id, version_at(store, thread_id, moment))


# -- differences -----------------------------------------------------------


def diff_values(old: dict[str, Any], new: dict[str, Any]) -> list[KeyChange]:
    """The keys whose values differ, in `new`'s order, then the keys `new` lacks."""
    changes = []
    for key in dict.fromkeys([*new, *old]):
        if key not in new:
            changes.append(KeyChange(key, "removed", old=old[key]))
        elif key not in old:
            changes.append(KeyChange(key, "added", new=new[key]))
        elif old[key] != new[key] or type(old[key]) is not type(new[key]):
            changes.append(KeyChange(key, "changed", old=old[key], new=new[key]))
    return changes


def diff_versions(
    store: Workflows, thread_id: str, from_ref: str | int, to_ref: str | int
) -> StateDiff:
    """What changed in the state between two versions (numbers or checkpoint ids)."""
    before = state_at_version(store, thread_id, resolve_version(store, thread_id, from_ref))
    after = state_at_version(store, thread_id, resolve_version(store, thread_id, to_ref))
    return StateDiff(
        thread_id=thread_id,
        from_version=before.version,
        to_version=after.version,
        changes=diff_values(before.values, after.values),
        next_from=before.next,
        next_to=after.next,
        status_from=before.status,
        status_to=after.status,
    )


# -- lineage ---------------------------------------------------------------


def fork_origin(store: Workflows, thread_id: str) -> ForkOrigin | None:
    """Where the thread was forked from, or None if it was started afresh."""
    first = event_at(store, thread_id, 1)
    if not isinstance(first, WorkflowThread.ThreadForked):
        return None
    return ForkOrigin(
        thread_id=first.source_thread_id,
        version=first.source_version,
        event_hash=first.source_hash,
        forked_at=first.timestamp,
    )
