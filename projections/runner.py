"""Feed read models from the store's notification log, exactly once.

Each projection has a position, the id of the last notification it applied,
kept in `holdpoint_projection_positions` in the same database as its rows and
updated in the same transaction: a batch is applied whole or not at all, so a
killed projector neither loses nor repeats an event. The position row is
locked for the batch (`FOR UPDATE` on PostgreSQL, `BEGIN IMMEDIATE` on
SQLite), so two projectors never apply the same batch. On SQLite, whose one
write lock also holds up the store's writers, a batch is worked out in a read
transaction first and only written under the lock, if the positions are still
those it was worked out from. Notification ids are visible in commit order
(the store's insert takes the table lock), so reading "after my position"
never passes over an event that commits later.

Each model's tables have a shape, its `version`, recorded beside the
positions: a runner whose code has another version of a model rebuilds it
from the log (`projections/model_tables.py`).

An event that cannot be decoded is quarantined, not applied
(`projections/quarantine.py`): recorded in the batch's transaction, passed to
`on_quarantine` once the batch commits (by default, a warning in the log),
and passed by; the positions move past it. A read model that fails on an
event it could decode is a bug, and still stops the runner.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime

import structlog
from eventsourcing.utils import get_topic

from domain.integrity.decodable import thread_id_in
from domain.record.application import Workflows
from domain.retention.purge_ledger import PurgeLedger
from persistence.failures import STORE_UNAVAILABLE
from projections import quarantine
from projections.database import Cursor, Database, StagedCursor, database_for
from projections.log_reader import Entry, LogReader
from projections.model_tables import (
    POSITIONS,
    IndexesKept,
    check_set_up,
    create_tables,
    needs,
)
from projections.privileges import may_create_tables, require, store_needs
from projections.projection import Projection
from projections.quarantine import QuarantinedEvent
from projections.timestamps import utc_text

# A rebuild's positions per transaction: the write lock is held for a fraction of a second.
REBUILD_BATCH_SIZE = 10_000
PURGED_TOPIC = get_topic(PurgeLedger.ThreadsPurged)
log = structlog.get_logger()
Progress = Callable[[str, int, int], None]
Quarantined = Callable[[QuarantinedEvent], None]


def log_quarantined(event: QuarantinedEvent) -> None:
    """The default `on_quarantine`: one warning in the log."""
    log.warning(
        "event quarantined: it cannot be decoded (see holdpoint verify)",
        position=event.position,
        thread_id=event.thread_id,
        originator_id=event.originator_id,
        version=event.originator_version,
        topic=event.topic,
        error=event.error,
    )


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for one batch.

    A batch allocates tens of thousands of dicts that live until it ends and
    form no cycles (reference counting frees them); left on, the collector
    would scan them again and again as they age. One batch bounds the pause.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@dataclass(frozen=True)
class ProjectionStatus:
    name: str
    position: int
    head: int

    @property
    def lag(self) -> int:
        return max(self.head - self.position, 0)


class ProjectionRunner:
    """Keeps `projections` up to date with `store`."""

    def __init__(
        self,
        store: Workflows,
        projections: Sequence[Projection],
        database: Database | None = None,
        batch_size: int = 1000,
        rebuild_batch_size: int = REBUILD_BATCH_SIZE,
        on_quarantine: Quarantined = log_quarantined,
    ) -> None:
        self.store = store
        self.on_quarantine = on_quarantine  # called for each event quarantined, after its batch
        self.projections = {projection.name: projection for projection in projections}
        self.db = database or database_for(store)
        self.batch_size = batch_size
        self.rebuild_batch_size = max(rebuild_batch_size, batch_size)
        self._topics = {
            name: {get_topic(cls) for cls in projection.event_classes}
            | ({PURGED_TOPIC} if projection.thread_rows else set())
            for name, projection in self.projections.items()
        }
        self._wanted = frozenset().union(*self._topics.values())
        self._log = LogReader(store, self.db)
        # Where the next batch starts: the last position this runner's last batch committed
        # (every position is at least that), or None (read them). A batch checks it against
        # the locked positions before it writes, so it only spares a read.
        self._start: int | None = None
        # False: the store's role may not create tables (`?create_tables=no`); the runner then
        # issues no DDL, and checks the tables and its grants instead.
        self.creates_tables = may_create_tables(store)
        self.setup()

    def setup(self) -> None:
        """Create the positions and versions tables, the quarantine, and the models' tables
        and indexes that are missing; rebuild from zero a model whose tables are of another
        version (`create_tables`). In a store that may not create tables, check instead
        that they are there, that the role holds the grants the runner needs (`needs`)
        and that each model is set up in its version (TablesNotReadyError otherwise)."""
        if self.creates_tables:
            with self.db.transaction() as cursor:
                create_tables(cursor, self.db, self.projections)
            return
        require(self.db, [*store_needs(self.store), *needs(self.projections)])
        with self.db.transaction(write=False) as cursor:
            check_set_up(cursor, self.db, self.projections)

    def head(self) -> int:
        return int(self.store.recorder.max_notification_id() or 0)

    def status(self) -> list[ProjectionStatus]:
        head = self.head()
        with self.db.transaction(write=False) as cursor:
            cursor.execute(f"SELECT name, position FROM {self.db.table(POSITIONS)}")
            positions = dict(cursor.fetchall())
        return [
            ProjectionStatus(name, int(positions.get(name, 0)), head) for name in self.projections
        ]

    def catch_up(self, progress: Progress | None = None, batch_size: int | None = None) -> int:
        """Apply everything recorded so far; return how many log positions this call applied.

        One pass over the log feeds every read model: each event is read and
        decoded once, and applied to each model that has not applied it yet,
        `batch_size` positions per transaction (default: the runner's). After
        each batch, `progress(name, position, head)` is called for each model the
        pass feeds (those behind the head when it started), with the pass's position.
        """
        applied, head = 0, self.head()
        fed = self._behind(head) if progress is not None else []
        while True:
            with cyclic_gc_paused():
                count, reached = self._apply_batch(head, batch_size or self.batch_size)
            applied += count
            if progress is not None:
                for name in fed:
                    progress(name, reached, head)
            if reached >= head:
                return applied

    def rebuild(self, names: Iterable[str] | None = None, progress: Progress | None = None) -> int:
        """Forget the rows of `names` (default: all) and apply the whole log again.

        In batches of `rebuild_batch_size`: a rebuild's batches mostly start the
        threads they hold, so they load almost nothing, and fewer, larger
        transactions write the same rows with fewer statements and commits.
        """
        chosen = list(names or self.projections)
        unknown = [name for name in chosen if name not in self.projections]
        if unknown:
            msg = f"Unknown projection {unknown[0]!r}: use one of {', '.join(self.projections)}"
            raise ValueError(msg)
        # The first batch is read while the tables are cleared.
        self._log.read_ahead(0, min(self.rebuild_batch_size, self.head()), self._wanted)
        with self.db.transaction() as cursor:
            self._locked_positions(cursor)  # a batch another runner is applying ends first
            clearing = cursor if self.creates_tables else IndexesKept(cursor)
            for name in chosen:
                self.projections[name].clear(clearing, self.db)
                cursor.execute(
                    f"UPDATE {self.db.table(POSITIONS)} SET position = 0 WHERE name = %s", (name,)
                )
        self._start = None
        try:
            return self.catch_up(progress, self.rebuild_batch_size)
        finally:  # the indexes `clear` dropped, built once over every row (after a crash: setup)
            self._create_tables(chosen)

    def wait(self, position: int, timeout: float, poll: float = 0.01) -> bool:
        """Wait until every projection has applied `position`; False on timeout."""
        pause = threading.Event()
        deadline = time.monotonic() + timeout
        while True:
            if all(status.position >= position for status in self.status()):
                return True
            if time.monotonic() >= deadline:
                return False
            pause.wait(min(poll, max(deadline - time.monotonic(), 0)))

    def run_forever(
        self,
        stop: threading.Event,
        poll: float = 0.2,
        after_catch_up: Callable[[], object] | None = None,
        retry_after: float = 1.0,
        gather: float = 0.0,
    ) -> None:
        """The projector: catch up (then `after_catch_up`), again on every commit
        the store announces (PostgreSQL's LISTEN/NOTIFY) or every `poll` s, until `stop`;
        but not again within `gather` s of the last catch-up's start. Under a stream of
        commits, each batch then takes what came in that time, where one batch a commit
        would pay the batch's reads, writes and commit for a few events; a commit after a
        quiet spell is applied at once.

        A store that does not answer (down, locked, full) is waited out: the
        failed batch changed nothing, so the projector tries again every
        `retry_after` s, with new connections, and goes on where it was.
        """
        while not stop.is_set():
            try:
                with self.db.wakeups(self.store) as wakeups:
                    while not stop.is_set():
                        began = time.monotonic()
                        self.catch_up()
                        if after_catch_up is not None:
                            after_catch_up()
                        wakeups.wait(stop, poll)
                        pause = gather - (time.monotonic() - began)
                        if pause > 0:
                            stop.wait(pause)
            except STORE_UNAVAILABLE as error:
                log.warning(
                    "read models wait for the store",
                    error_type=type(error).__name__,
                    error=str(error),
                    retry_after=retry_after,
                )
                stop.wait(retry_after)

    def close(self) -> None:
        self._log.close()
        self.db.close()

    def _create_tables(self, names: Sequence[str]) -> None:
        """Create the tables and indexes of `names` that are missing (none: a store that may
        not create tables kept them).

        On PostgreSQL each model's in a transaction of its own, on a connection
        of its own, all at once: the server builds their indexes side by side.
        """
        if not self.creates_tables:
            return
        if self.db.dialect != "postgres" or len(names) < 2:
            with self.db.transaction() as cursor:
                for name in names:
                    self.projections[name].create_tables(cursor, self.db)
            return
        with ThreadPoolExecutor(len(names), thread_name_prefix="projections-index") as pool:
            for done in [pool.submit(self._create_tables_apart, name) for name in names]:
                done.result()

    def _create_tables_apart(self, name: str) -> None:
        """`name`'s tables, on this worker thread's connection, closed after."""
        try:
            with self.db.transaction() as cursor:
                self.projections[name].create_tables(cursor, self.db)
        finally:
            self.db.close()

    def _apply_batch(self, head: int, batch_size: int) -> tuple[int, int]:
        """The next batch of positions up to `head`, into every model behind it, committed
        with the new positions; return how many positions it applied and the last.

        The batch is read and decoded before the positions are locked (a read
        transaction may not become a write one on SQLite, and the batch's cost
        is mostly decoding, which need not hold the lock). Positions up to a
        head once seen are final: ids become visible in commit order. A batch
        starts where this runner's last one left the positions (they are read
        when that is not known, or when nothing lies past it). A batch that
        finds the positions moved back (a rebuild started meanwhile) applies
        nothing, and the next is read from the new positions.
        """
        start, self._start = self._start, None  # known again once this batch commits
        if start is None or start >= head:  # nothing past it: the positions may have moved back
            with self.db.transaction(write=False) as cursor:
                start = min(self._read_positions(cursor).values())
        last = min(start + batch_size, head)
        if last <= start:
            return 0, start
        # (on PostgreSQL the next batch is read meanwhile, see `LogReader.read`)
        events = self._log.read(start, last, self._wanted, min(last + batch_size, head))
        purge = next((e for e in events if e.topic == PURGED_TOPIC), None)
        if purge is not None and purge.position < last:  # a batch ends at a purge
            last = purge.position
            events = [e for e in events if e.position <= last]
        undecodable = self._quarantined(events)
        if self.db.dialect == "sqlite":
            applied = self._apply_staged(events, undecodable, start, last)
        else:
            with self.db.transaction() as cursor:
                positions = self._locked_positions(cursor)  # another runner may have moved them
                if min(positions.values()) < start:
                    return 0, start
                self._apply(events, undecodable, last, positions, cursor)
            applied = max(last - min(positions.values()), 0), last
        if applied[1] == last:  # committed: the next batch starts here; say what was passed by
            self._start = last
            for event in undecodable:
                self.on_quarantine(event)
        return applied

    def _apply_staged(
        self, events: list[Entry], undecodable: list[QuarantinedEvent], start: int, last: int
    ) -> tuple[int, int]:
        """SQLite: work the batch's rows out in a read transaction, then write them and
        the positions in one write transaction, so that the file's write lock is held for
        the writes alone. If another runner moved the positions in between, the rows
        worked out are stale: nothing is written, and the next batch starts again."""
        with self.db.transaction(write=False) as cursor:
            positions = self._read_positions(cursor)
            if min(positions.values()) < start:
                return 0, start
            staged = StagedCursor(cursor)
            self._apply(events, undecodable, last, positions, staged)
        with self.db.transaction() as cursor:
            if self._locked_positions(cursor) != positions:
                return 0, start
            staged.replay(cursor)
        return max(last - min(positions.values()), 0), last

    def _apply(
        self,
        events: list[Entry],
        undecodable: list[QuarantinedEvent],
        last: int,
        positions: dict[str, int],
        cursor: Cursor,
    ) -> None:
        """The changes of the events after each model's position, the quarantine of the
        batch's range, and the new positions."""
        quarantine.record_batch(cursor, self.db, min(positions.values()), last, undecodable)
        for name, position in positions.items():
            topics = self._topics[name]
            batch = [
                e
                for e in events
                if e.position > position and e.topic in topics and e.failure is None
            ]
            if batch:
                self._apply_to(self.projections[name], batch, cursor)
        moved = [name for name, position in positions.items() if position < last]
        if moved:  # in one statement for all of them, not one per model
            cursor.execute(
                f"UPDATE {self.db.table(POSITIONS)} SET position = %s "
                f"WHERE name IN ({', '.join(['%s'] * len(moved))})",
                (last, *moved),
            )

    def _apply_to(self, projection: Projection, batch: list[Entry], cursor: Cursor) -> None:
        """The batch into one model, then the purge it may end with (a batch ends at a
        purge: on SQLite a batch's writes are staged, so what follows a purge in it would
        read rows the purge's deletes have not yet reached)."""
        start = 0
        for index, entry in enumerate(batch):
            if entry.topic == PURGED_TOPIC:
                upto = index + (PurgeLedger.ThreadsPurged in projection.event_classes)
                if upto > start:  # the purge itself too, to a model that lists purges
                    projection.apply_batch(batch[start:upto], cursor, self.db)
                threads = [(t["thread_id"], t["aggregate_id"]) for t in entry.event.threads]
                projection.forget(threads, cursor, self.db)
                start = index + 1
        if start < len(batch):
            projection.apply_batch(batch[start:], cursor, self.db)

    def _quarantined(self, events: list[Entry]) -> list[QuarantinedEvent]:
        """The batch's events that cannot be decoded, as the quarantine records them."""
        now = utc_text(datetime.now(UTC))
        return [
            QuarantinedEvent(
                position=entry.position,
                originator_id=entry.key,
                thread_id=(
                    entry.thread.thread_id
                    if entry.thread is not None
                    else thread_id_in(entry.key, entry.state)
                    if entry.version == 1
                    else None
                ),
                originator_version=entry.version,
                topic=entry.topic,
                error=entry.failure,
                first_seen_at=now,
            )
            for entry in events
            if entry.failure is not None
        ]

    def _behind(self, head: int) -> list[str]:
        """The models whose position is before `head`, in the runner's order."""
        with self.db.transaction(write=False) as cursor:
            positions = self._read_positions(cursor)
        return [name for name in self.projections if positions.get(name, 0) < head]

    def _read_positions(self, cursor: Cursor) -> dict[str, int]:
        cursor.execute(f"SELECT name, position FROM {self.db.table(POSITIONS)}")
        return self._positions(cursor)

    def _locked_positions(self, cursor: Cursor) -> dict[str, int]:
        """The positions, locked until the transaction ends (SQLite's write transaction
        already excludes every other writer)."""
        lock = " FOR UPDATE" if self.db.dialect == "postgres" else ""
        cursor.execute(f"SELECT name, position FROM {self.db.table(POSITIONS)} ORDER BY name{lock}")
        return self._positions(cursor)

    def _positions(self, cursor: Cursor) -> dict[str, int]:
        return {
            name: int(position) for name, position in cursor.fetchall() if name in self.projections
        }
