"""Workflows: the event-sourced application that stores threads.

It is what a graph's `checkpointer` is. `domain.record.store.open_store` builds one
for a store URL; `InMemorySaver()` is one kept in memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, Protocol, TypeVar, cast
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.domain import Snapshot
from eventsourcing.persistence import (
    AggregateRecorder,
    IntegrityError,
    MapperDeserialisationError,
    StoredEvent,
)
from eventsourcing.utils import TopicError, get_topic, resolve_topic

from domain.access.identity import RefusedAttempt
from domain.errors import (
    ConcurrentUpdateError,
    OversightError,
    ThreadNotFoundError,
    ThreadUnreadableError,
)
from domain.privacy.envelopes import Cipher
from domain.privacy.opener import EnvelopeOpener
from domain.privacy.personal import Personal
from domain.privacy.protector import Protector
from domain.privacy.subject_keys import MemorySubjectKeys, SubjectKeys
from domain.record.aggregates import AGGREGATES
from domain.record.chain import ChainReport, RecordedEvent, verify_records
from domain.record.hashing import to_json, use_encoder
from domain.record.thread import WorkflowThread
from domain.record.thread_uuids import thread_uuid

SNAPSHOT_INTERVAL = 50
SHORT_THREAD = 16  # read in one query; a longer thread goes through its snapshot
RECORD_ATTEMPTS = 10  # a record on a fresh read, again while other writers append first
MAX_VERSION = 2**62  # above this a version names nothing (and `version + ahead` fits a bigint)
RECORDED = AGGREGATES  # imported: each event of the log decodes in a process with a store
# What the store's mapper raises for a stored event it cannot decode (its own error,
# `persistence.event_mapper.UndecodableEventError`, is a MapperDeserialisationError).
UNDECODABLE = (MapperDeserialisationError, TopicError)
SNAPSHOT_TOPIC = get_topic(WorkflowThread.Snapshot)
# The SQL stores' subjects' keys, a table beside the events (a memory store keeps them
# in memory), and the cipher that seals personal values: by topic, as the domain
# imports no infrastructure and no cryptography library.
SUBJECT_KEYS_TOPIC = "service.subject_keys:subject_keys_for"
SUBJECT_CIPHER_TOPIC = "integrity.subject_cipher:CIPHER"
# The events' canonical JSON by orjson, where it writes the stdlib's bytes (hashing.py).
CANONICAL_ENCODER_TOPIC = "integrity.fast_hash:canonical_bytes"
T = TypeVar("T")


def fold_events(thread: Any, events: Iterable[Any]) -> Any:
    """Apply events in order (the library's projector, minus a costly
    runtime-protocol `isinstance` check on every event)."""
    for event in events:
        thread = event.mutate(thread)
    return thread


def unreadable(thread_id: str, error: Exception) -> ThreadUnreadableError:
    """The domain's error for a stored event of the thread that the mapper could not
    decode (the store's mapper names its version, topic and why)."""
    version = getattr(error, "originator_version", None)
    topic = getattr(error, "topic", None)
    name = topic.rpartition(":")[2].rpartition(".")[2] if isinstance(topic, str) else None
    why = getattr(error, "reason", None) or f"{type(error).__name__}: {error}"
    return ThreadUnreadableError(
        thread_id, version if isinstance(version, int) else None, name, why
    )


@contextmanager
def decoding(thread_id: str) -> Iterator[None]:
    """Turn a failure to decode one of the thread's events into ThreadUnreadableError."""
    try:
        yield
    except UNDECODABLE as error:
        raise unreadable(thread_id, error) from None


def decoded(thread_id: str, events: Iterator[T]) -> Iterator[T]:
    """`events`, decoded as they are iterated, with `decoding`'s error."""
    with decoding(thread_id):
        yield from events


def _of_a_snapshot(error: Exception) -> bool:
    return getattr(error, "topic", None) == SNAPSHOT_TOPIC


@dataclass(frozen=True)
class ThreadAt:
    """A thread as of one version (see `Workflows.thread_at`)."""

    thread: WorkflowThread
    event: WorkflowThread.Event  # the event recorded at that version
    after: Iterator[WorkflowThread.Event]  # the next events read, decoded as iterated


class ReadsAtVersion(Protocol):
    """A recorder that reads a thread as of a version in one query (the SQL stores)."""

    def select_at_version(
        self,
        snapshots: AggregateRecorder | None,
        originator_id: UUID,
        version: int,
        upto: int,
        *,
        head: bool,
    ) -> tuple[StoredEvent | None, Sequence[StoredEvent], int | None]:
        """What `Workflows.read_at` folds, in one query.

        Args:
            snapshots: the recorder of the aggregate's snapshots (on the same
                database), or None not to look for one.
            originator_id: the aggregate.
            version: the version wanted.
            upto: the last version to read (`version` and the events read ahead).
            head: whether to read the aggregate's latest version too (it
                costs the query a second look at the events).

        Returns:
            The latest snapshot at or before `version` (or None), the events
            from that snapshot's own version (from the first without one) to
            `upto` in order, and the aggregate's latest version (0: none;
            None: not asked for).
        """
        ...


@dataclass(frozen=True)
class NewEvents:
    """A thread's new events, taken from it to be committed, and the snapshot due with
    them (None: none due)."""

    thread_id: str
    events: Sequence[Any]
    snapshot: Snapshot | None


@dataclass(frozen=True)
class VersionRead:
    """A thread as of one version, if recorded, and its latest version (see `Workflows.read_at`)."""

    found: ThreadAt | None
    head: int | None  # None when not asked for; 0 when nothing is recorded


class Workflows(Application[Any]):
    """Threads of workflow graphs, kept as events in one store."""

    name = "holdpoint"
    snapshotting_intervals: ClassVar[dict[type[Any], int]] = {WorkflowThread: SNAPSHOT_INTERVAL}

    def __init__(self, env: dict[str, str] | None = None, url: str = "memory://") -> None:
        super().__init__(env=env)
        use_encoder(resolve_topic(CANONICAL_ENCODER_TOPIC))
        self.url = url
        reader = self.recorder if hasattr(self.recorder, "select_at_version") else None
        self._reads_at_version = cast("ReadsAtVersion | None", reader)
        self._personal: dict[str, Personal] = {}
        self._subject_keys: SubjectKeys | None = None
        self._subject_cipher: Cipher | None = None
        if hasattr(self.mapper, "sealed"):  # the store's mapper: it writes and opens envelopes
            self.mapper.sealed = EnvelopeOpener(
                lambda: self.subject_keys, lambda: self.subject_cipher
            )

    # -- personal data (domain/privacy) ---------------------------------

    def declare_personal(self, graph_id: str, personal: Personal) -> None:
        """Record the personal values of `graph_id`'s threads sealed (`Personal`), on every
        path that records on them through this store."""
        self._personal[graph_id] = personal

    def protector_for(self, graph_id: str) -> Protector | None:
        """What seals the personal values of `graph_id`'s events (None: it declares none)."""
        personal = self._personal.get(graph_id)
        if personal is None:
            return None
        return Protector(personal, self.subject_keys, self.subject_cipher)

    @property
    def subject_keys(self) -> SubjectKeys:
        """The data subjects' keys, kept apart from the events."""
        if self._subject_keys is None:
            if self.env.get("PERSISTENCE_MODULE") == "eventsourcing.popo":
                self._subject_keys = MemorySubjectKeys()
            else:
                self._subject_keys = resolve_topic(SUBJECT_KEYS_TOPIC)(self)
        return self._subject_keys

    @property
    def subject_cipher(self) -> Cipher:
        """The cipher of the envelopes (AES-256-GCM)."""
        if self._subject_cipher is None:
            self._subject_cipher = resolve_topic(SUBJECT_CIPHER_TOPIC)
        return self._subject_cipher

    def close(self) -> None:
        keys, self._subject_keys = self._subject_keys, None
        if keys is not None:
            keys.close()
        super().close()

    def _protected(self, thread: T) -> T:
        """`thread`, given its graph's protector if its graph declares personal data."""
        if self._personal and isinstance(thread, WorkflowThread):
            protector = self.protector_for(thread.graph_id)
            if protector is not None:
                thread.protect_with(protector)
        return thread

    def __enter__(self) -> Workflows:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def thread(self, thread_id: str, version: int | None = None) -> WorkflowThread | None:
        """The thread as of `version` (default: now), or None if never recorded (see
        `_thread`)."""
        return self._protected(self._thread(thread_id, version))

    def _thread(self, thread_id: str, version: int | None = None) -> WorkflowThread | None:
        """The thread as of `version` (default: now), or None if never recorded.

        A short thread (fewer than SHORT_THREAD events: a typical approval)
        has no snapshot, so it is read in one query; a longer one goes through
        the repository (snapshot, then the events after it).
        """
        aggregate_id = thread_uuid(thread_id)
        with decoding(thread_id):
            if version is None:
                interval = self.snapshotting_intervals.get(WorkflowThread, SNAPSHOT_INTERVAL)
                probe = min(SHORT_THREAD, interval)
                rows = self.recorder.select_events(aggregate_id, limit=probe)
                if len(rows) < probe:  # the whole thread, and too short to have a snapshot
                    events = map(self.mapper.to_domain_event, rows)
                    return fold_events(None, events) if rows else None
            try:
                return self.repository.get(  # type: ignore[no-any-return]
                    aggregate_id, version=version, projector_func=fold_events
                )
            except AggregateNotFoundError:
                return None
            except UNDECODABLE as error:
                if not _of_a_snapshot(error):
                    raise
            # A snapshot is a cache, never evidence: one that cannot be read is passed by.
            found = fold_events(None, self.events.get(aggregate_id, lte=version))
            return cast("WorkflowThread | None", found)

    def thread_at(self, thread_id: str, version: int, ahead: int = 0) -> ThreadAt | None:
        """The thread as of `version`, the event recorded there, and the events after it.

        None when nothing is recorded at `version` (past the head, or a thread
        never recorded). See `read_at`.
        """
        return self.read_at(thread_id, version, ahead).found

    def read_at(
        self, thread_id: str, version: int, ahead: int = 0, *, head: bool = False
    ) -> VersionRead:
        """The thread as of `version` and the `ahead` events after it; with `head`, its
        latest version too.

        One query on the SQL stores however long the thread (`ReadsAtVersion`):
        its latest snapshot at or before `version`, its events from that
        snapshot's own event (so the event at `version` comes back even when it
        is the snapshot's) to `version + ahead`, and with `head` its latest
        version. In memory, a query for each. Only the events after the
        snapshot are folded, and the `ahead` events are decoded only as they
        are read. Below the first multiple of the snapshot interval no
        snapshot is looked for: `record` takes none there.
        """
        aggregate_id = thread_uuid(thread_id)
        if not 0 < version <= MAX_VERSION:
            return VersionRead(None, self._head(aggregate_id) if head else None)
        interval = self.snapshotting_intervals.get(WorkflowThread, SNAPSHOT_INTERVAL)
        snapshots = self.snapshots if version >= interval else None  # none is taken earlier
        upto = version + max(ahead, 0)
        thread: Any = None
        after = 0
        last: int | None = None
        events: Iterator[WorkflowThread.Event]
        reader = self._reads_at_version
        if reader is not None:
            recorder = None if snapshots is None else snapshots.recorder
            snapshot, stored, last = reader.select_at_version(
                recorder, aggregate_id, version, upto, head=head
            )
            decode = cast("Callable[[StoredEvent], Any]", self.mapper.to_domain_event)
            if snapshot is not None:
                try:
                    thread, after = decode(snapshot).mutate(None), snapshot.originator_version
                except UNDECODABLE:  # a snapshot is a cache: read the events from the first
                    _, stored, last = reader.select_at_version(
                        None, aggregate_id, version, upto, head=head
                    )
            events = decoded(thread_id, map(decode, stored))
        else:
            if snapshots is not None:
                latest = snapshots.get(aggregate_id, desc=True, limit=1, lte=version)
                try:
                    for found in cast("Iterator[Snapshot]", latest):
                        thread, after = found.mutate(None), found.originator_version
                except UNDECODABLE:
                    pass  # a snapshot is a cache: read the events from the first
            events = decoded(
                thread_id,
                cast(
                    "Iterator[WorkflowThread.Event]",
                    self.events.get(aggregate_id, gt=max(after - 1, 0), lte=upto),
                ),
            )
            last = self._head(aggregate_id) if head else None
        for event in events:
            if event.originator_version > after:
                thread = event.mutate(thread)
            if event.originator_version == version:
                return VersionRead(ThreadAt(self._protected(thread), event, events), last)
        return VersionRead(None, last)

    def _head(self, aggregate_id: UUID) -> int:
        last = self.recorder.select_events(aggregate_id, desc=True, limit=1)
        return int(last[0].originator_version) if last else 0

    def unchanged_since(self, thread_id: str, version: int) -> bool:
        """Whether nothing was recorded on the thread after `version` (0: never started)."""
        return not self.recorder.select_events(thread_uuid(thread_id), gt=version, limit=1)

    def thread_events(
        self, thread_id: str, *, gt: int | None = None, lte: int | None = None
    ) -> list[WorkflowThread.Event]:
        """The thread's recorded events, oldest first (ThreadUnreadableError if one of them
        cannot be decoded)."""
        with decoding(thread_id):
            return list(self.events.get(thread_uuid(thread_id), gt=gt, lte=lte))  # type: ignore[arg-type]

    def expire(self, thread_id: str, interrupt_id: str, now: datetime) -> int | None:
        """Apply an overdue interrupt's expiry rule; the position, or None if not due.

        Of several workers expiring the same interrupt, one records
        InterruptExpired; the others get ConcurrentUpdateError or None.
        """
        thread = self.thread(thread_id)
        if thread is None or not thread.expire(interrupt_id, now):
            return None
        return self.record(thread)

    def verify_chain(self, thread_id: str) -> ChainReport:
        """Check the thread's hash chain as its events are stored."""
        return verify_records(self.recorded_events(thread_id), thread_id)

    def recorded_events(self, thread_id: str) -> list[RecordedEvent]:
        """The thread's events as stored, before any upcasting (for verification)."""
        mapper = self.mapper
        records = []
        for stored in self.recorder.select_events(thread_uuid(thread_id)):
            data = stored.state
            if mapper.cipher:
                data = mapper.cipher.decrypt(data)
            if mapper.compressor:
                data = mapper.compressor.decompress(data)
            name = stored.topic.rpartition(":")[2].rpartition(".")[2]
            try:
                state = mapper.transcoder.decode(data)
            except Exception as error:  # any failure: the stored state is not JSON
                why = f"its stored state is not JSON ({type(error).__name__}: {error})"
                raise ThreadUnreadableError(
                    thread_id, stored.originator_version, name, why
                ) from None
            if not isinstance(state, dict):
                why = "its stored state is not a JSON object"
                raise ThreadUnreadableError(thread_id, stored.originator_version, name, why)
            records.append(RecordedEvent(stored.originator_version, name, state))
        return records

    def iter_thread_events(self, thread_id: str) -> Iterator[WorkflowThread.Event]:
        events = iter(self.events.get(thread_uuid(thread_id)))
        return decoded(thread_id, cast("Iterator[WorkflowThread.Event]", events))

    def record(self, thread: WorkflowThread, *, guard: object | None = None) -> int | None:
        """Commit the thread's new events together; return the last position.

        Raises ConcurrentUpdateError, having written nothing, when another
        writer appended to the thread first. A snapshot is taken from the
        thread in hand (no re-read) whenever the commit crosses a multiple of
        the snapshot interval. `guard`: a condition the store's recorder checks
        and writes in the same commit (`persistence.commit_guard`), raising its
        refusal, having written nothing, when it does not hold.
        """
        return self.commit(self.take_new(thread), guard=guard)

    def take_new(self, thread: WorkflowThread) -> NewEvents:
        """The thread's new events, taken from it to be committed (`commit`), with the
        snapshot due if they cross a multiple of the snapshot interval, taken now: from
        the thread as those events leave it."""
        events = thread.collect_events()
        snapshot = None
        # A thread with personal data is never snapshotted: a snapshot holds its values
        # in plaintext, which an erasure could not reach by destroying a key.
        if events and self.snapshots is not None and not thread.protected:
            first, last = events[0].originator_version, events[-1].originator_version
            interval = self.snapshotting_intervals.get(WorkflowThread, SNAPSHOT_INTERVAL)
            if (first - 1) // interval != last // interval:
                snapshot = WorkflowThread.Snapshot.take(thread)
        return NewEvents(thread.thread_id, events, snapshot)

    def commit(self, new: NewEvents, *, guard: object | None = None) -> int | None:
        """Commit events taken from a thread (`take_new`), all or none, then their
        snapshot; return the last position (see `record`)."""
        if not new.events:
            return None
        # The event store's `put`, without the recordings it makes of each event: the
        # last position is all a commit returns.
        stored = list(map(self.mapper.to_stored_event, new.events))
        try:
            positions = self.recorder.insert_events(
                stored, **({} if guard is None else {"guard": guard})
            )
        except IntegrityError:
            raise ConcurrentUpdateError(new.thread_id) from None
        if new.snapshot is not None and self.snapshots is not None:
            self.snapshots.put([new.snapshot])
        return positions[-1] if positions else None

    def past_asides(self, thread_id: str, base: int) -> WorkflowThread | None:
        """The thread as recorded now, when every event another writer appended to it after
        version `base` is an aside (`WorkflowThread.ASIDES`: its metadata, a question still
        open assigned or expired, its cancellation): a run's step those events refused can
        be made again on it. None when one of them bears on the step."""
        fresh = self.thread(thread_id)
        if fresh is None:
            return None
        appended = self.thread_events(thread_id, gt=base, lte=fresh.version)
        if all(isinstance(event, WorkflowThread.ASIDES) for event in appended):
            return fresh
        return None

    def record_refusal(
        self,
        error: OversightError,
        actor: dict[str, Any],
        action: str,
        target: str | None,
        request: dict[str, Any] | None = None,
    ) -> None:
        """Record that a hold point's rule refused `actor` (an AccessRefused, listed with the
        API's refusals). `request`: the HTTP request the attempt came in, as
        {"action": "POST /path", "target": id}, which then names the attempt."""
        if request:
            action, target = str(request.get("action") or action), request.get("target")
        attempt = RefusedAttempt.refuse(
            actor=actor, action=action, target=target, reason=error.reason, message=str(error)
        )
        self.save(attempt)

    def assign(
        self, thread_id: str, interrupt_id: str, reviewer_id: str | None, actor: dict[str, Any]
    ) -> int | None:
        """Name the reviewer of a pending interrupt (None: no one); the position.

        Raises ThreadNotFoundError or UnknownInterruptError (not pending: answered,
        expired, withdrawn), recording nothing.
        """
        thread = self.thread(thread_id)
        if thread is None:
            raise ThreadNotFoundError(thread_id)
        thread.assign(interrupt_id, reviewer_id, actor)
        return self.record(thread)

    def update_metadata(
        self, thread_id: str, metadata: dict[str, Any], actor: dict[str, Any]
    ) -> int | None:
        """Merge `metadata` into the thread's (MetadataUpdated, with the actor)."""
        return self._on_fresh_read(thread_id, lambda t: t.update_metadata(metadata, actor))

    def record_run_cancelled(
        self, thread_id: str, run_id: str, actor: dict[str, Any], reason: str | None
    ) -> int | None:
        """Record that the run stopped on `actor`'s request (RunCancelled), by its runner,
        once it ran its last step: on a fresh read, again if another writer appended first
        (a real LangGraph graph's last saves may still land)."""
        why = None if reason is None else to_json(str(reason), "The reason")
        return self._on_fresh_read(thread_id, lambda t: t.record_run_cancelled(run_id, actor, why))

    def _on_fresh_read(
        self, thread_id: str, change: Callable[[WorkflowThread], None]
    ) -> int | None:
        """Apply `change` to the thread as recorded and record it; again on a fresh read
        while another writer appends first. ThreadNotFoundError."""
        for _ in range(RECORD_ATTEMPTS):
            thread = self.thread(thread_id)
            if thread is None:
                raise ThreadNotFoundError(thread_id)
            change(thread)
            try:
                return self.record(thread)
            except ConcurrentUpdateError:
                continue
        raise ConcurrentUpdateError(thread_id)

    def cancel(self, thread_id: str, actor: dict[str, Any], reason: str | None) -> int | None:
        """Stop a thread for good (the Article 14(4)(e) stop button).

        Its pending interrupts are withdrawn; it can still be read. Raises
        ThreadNotFoundError or ThreadCancelledError, recording nothing.
        """
        thread = self.thread(thread_id)
        if thread is None:
            raise ThreadNotFoundError(thread_id)
        thread.cancel(actor, None if reason is None else to_json(str(reason), "The reason"))
        return self.record(thread)
