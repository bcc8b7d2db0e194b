"""The read models as the server uses them: kept up to date, and waited on.

In-process (the default; the only choice on SQLite and memory stores) a
background thread runs the projection runner's loop, and the deadline worker
after a pass (at most every `poll` seconds). On PostgreSQL it wakes on each
commit (the store's NOTIFY). On SQLite it wakes every `poll` seconds, or at once when a read
waits for a position: waking it on every write would have it contend for
SQLite's one write lock with the writers themselves (SQLite's busy handler
sleeps), which made a single client's refund cycle four times slower. It
writes under the file's write gate, taking turns with the store's writers
in this process, in batches of `SQLITE_BATCH` events so that none of them
waits long.
Reads that name a position (`wait_for`) wait until every read model has
applied it: read-your-writes, never a sleep.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import structlog

from domain.record.application import Workflows
from domain.record.resume_maps import is_interrupt_id
from domain.record.store import backend_of, open_store
from persistence.sqlite import write_gate
from projections.catalog import all_projections, runner_for
from projections.database import Cursor, Database, SQLiteDatabase, database_for
from projections.deadlines import DeadlineWorker
from projections.pending_approvals import PendingApprovals
from projections.runner import ProjectionRunner, ProjectionStatus
from service.errors import PositionBeyondLogError, ReadModelBehindError

log = structlog.get_logger()


# Events applied per transaction by the projector on SQLite: it holds the file's write
# lock meanwhile, and the store's writers wait for it (1,000, the runner's default, held
# it for up to a tenth of a second on a backlog).
SQLITE_BATCH = 50


class GatedSQLiteDatabase(SQLiteDatabase):
    """The read models in the store's SQLite file, written under the file's write gate.

    The projector then takes turns with the store's writers in this process on one
    lock (see `persistence.sqlite.write_gate`): a request's commit waits for a
    projector's batch, or the other way round, and is woken as soon as it is done,
    rather than sleeping in SQLite's busy handler. Reads take no gate.
    """

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self._gate = write_gate(path)

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[Cursor]:
        if not write:
            with super().transaction(write=False) as cursor:
                yield cursor
            return
        with self._gate, super().transaction(write=True) as cursor:
            yield cursor


def side_tables_for(store: Workflows) -> Database:
    """The store's own database, for the tables beside its events (runs, leases, sessions,
    reservations): on SQLite written under the file's write gate, as the read models are.

    On PostgreSQL its commits do not wait for the WAL to reach the disk (as the read
    models'): the store's next commit of events, which does wait, makes them durable
    with it, since the WAL is written in order. A lease that must be durable before any
    event is committed asks for it (`RunStore.open(durable=True)`)."""
    if backend_of(store) == "sqlite":
        return GatedSQLiteDatabase(str(store.env.get("SQLITE_DBNAME")))
    return database_for(store)


def _runner(store: Workflows) -> ProjectionRunner:
    """A runner of every read model (`runner_for`); on SQLite, gated, in short batches."""
    if backend_of(store) != "sqlite":
        return runner_for(store)
    path = str(store.env.get("SQLITE_DBNAME"))
    return ProjectionRunner(
        store, all_projections(), database=GatedSQLiteDatabase(path), batch_size=SQLITE_BATCH
    )


class ReadModels:
    """The projection runner, its thread, and waiting on positions."""

    def __init__(
        self,
        store: Workflows,
        *,
        projector: bool,
        poll: float,
        wait_timeout: float,
        gather: float = 0.0,
    ) -> None:
        self.store = store
        self.poll = poll
        self.gather = gather
        self.wait_timeout = wait_timeout
        # A memory store's read models live in one private database: share it. Otherwise
        # the projector has a store (a connection pool) of its own, for the log's head and
        # the deadline worker's writes, so that it never queues for a connection behind
        # request threads (it reads the log through its read-model connection).
        shared = backend_of(store) == "memory" or not projector
        self.projector_store = store if shared else open_store(store.url)
        self.runner = _runner(self.projector_store)
        self.reader: ProjectionRunner = self.runner if shared else _runner(store)
        self._expire = DeadlineWorker(self.projector_store, self.runner.db, poll)
        self.in_process = projector
        self._stop = threading.Event()
        self._nudge = threading.Event()
        self._thread: threading.Thread | None = None
        self.failure: str | None = None

    @property
    def db(self) -> Database:
        return self.reader.db

    def start(self) -> None:
        if not self.in_process or self._thread is not None:
            return
        self._thread = threading.Thread(
            target=self._project, name="holdpoint-projector", daemon=True
        )
        self._thread.start()

    def _project(self) -> None:
        log.info("projector started", projections=list(self.runner.projections))
        try:
            if self.runner.db.dialect == "postgres":  # woken by the store's NOTIFY on commit
                self.runner.run_forever(self._stop, self.poll, self._expire, gather=self.gather)
            else:  # woken by a read that waits for a position, or by the poll
                self.runner.run_forever(self._stop, 0, self._between_passes)
        except Exception as error:  # the runner stops; /readyz says so, the log says why
            self.failure = f"{type(error).__name__}: {error}"
            log.exception("projector stopped on an error")
            return
        log.info("projector stopped")

    def _between_passes(self) -> None:
        self._expire()
        self._nudge.wait(self.poll)
        self._nudge.clear()

    def nudge(self) -> None:
        """A read waits: project now rather than at the next poll."""
        self._nudge.set()

    @property
    def alive(self) -> bool:
        if not self.in_process:
            return True
        return self._thread is not None and self._thread.is_alive()

    def stop(self) -> None:
        self._stop.set()
        self._nudge.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        self.runner.close()
        if self.reader is not self.runner:
            self.reader.close()
        if self.projector_store is not self.store:
            self.projector_store.close()

    def status(self) -> list[ProjectionStatus]:
        return self.reader.status()

    def head(self) -> int:
        return self.reader.head()

    def wait_for(self, position: int | None) -> None:
        """Return once every read model has applied `position`; ReadModelBehindError after
        the timeout."""
        if not position:
            return
        head = self.head()
        if position > head:  # a client's mistake: waiting could never end
            raise PositionBeyondLogError(position, head)
        self.nudge()
        if self.reader.wait(position, self.wait_timeout):
            return
        lowest = min((s.position for s in self.status()), default=0)
        msg = (
            f"The read models reached position {lowest}, not {position}, within "
            f"{self.wait_timeout:g} s"
            + ("" if self.in_process else "; is a `holdpoint projector` running?")
        )
        raise ReadModelBehindError(msg)

    def catch_up_to_head(self) -> None:
        """Wait until the read models have applied everything recorded so far."""
        self.wait_for(self.head())

    def thread_of_interrupt(self, interrupt_id: str) -> str | None:
        """The thread of an interrupt (`PendingApprovals.thread_of`); on a miss, asked again
        once the read models have caught up (it may have been raised a moment ago)."""
        if not is_interrupt_id(interrupt_id):
            return None
        queue = PendingApprovals(self.db)
        thread_id = queue.thread_of(interrupt_id)
        if thread_id is None:
            self.catch_up_to_head()
            thread_id = queue.thread_of(interrupt_id)
        return thread_id
