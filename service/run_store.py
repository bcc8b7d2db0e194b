"""Runs and thread leases, in the store's own database.

A run is a row of `holdpoint_runs`: created (pending, in the queue, or at once
running), claimed, finished, taken over. One runner at a time per thread, in
the whole deployment, is a row of `holdpoint_thread_leases`: the thread, the run,
the runner (a process) and when the lease expires, by the database's clock. A
runner renews every lease it holds in one statement (`renew`), a few times per
lease period; a lease not renewed expires, and a live runner then takes the
run over (`take_over_expired`).

Why a table beside the read models, not events: a lease is renewed every few
seconds and means nothing once it has expired; as events it would fill the
hash-chained record with heartbeats an auditor has no use for. What the record
needs, it gets as events: the run's input or answer, every node's outcome,
and a takeover (`RunReclaimed`, before a node runs again). The row is the
operational state of a run; the thread's events stay the evidence.

Claims are atomic in both dialects: a lease is taken by an upsert that
succeeds only over an expired lease, and the queue is read `FOR UPDATE SKIP
LOCKED` on PostgreSQL (on SQLite a write transaction holds the file's one
write lock). Runs of one thread leave the queue in the order they entered it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from persistence.commit_guard import CommitGuard
from projections.database import Cursor, Database
from service.errors import RunExistsError

RUNS = "holdpoint_runs"
LEASES = "holdpoint_thread_leases"
PENDING, RUNNING, SUCCESS, ERROR = "pending", "running", "success", "error"
INTERRUPTED = "interrupted"  # cancelled (LangGraph's name for a run stopped on request)
DONE = (SUCCESS, ERROR, INTERRUPTED)
# Seconds a run's creation time (this host's clock, microseconds) may be ahead of the
# database's `NOW` (SQLite's is milliseconds) and the run still count as created: only a
# run created in the future (`after_seconds`) waits.
CLOCK_SLACK = 0.05
# A running run's `output`, until it ends, when a cancel of it was asked: who asked, why.
CANCEL = "__cancel__"
# Seconds since the epoch, by the database's clock: every process compares leases on
# one clock, whatever its host's says.
NOW = {
    "sqlite": "((julianday('now') - 2440587.5) * 86400.0)",
    "postgres": "extract(epoch from clock_timestamp())::double precision",
}
_COLUMN_TYPES = (
    *["text"] * 9,  # run_id ... output
    "bigint",  # position
    "text",  # owner
    "integer",  # attempt
    "text",  # takeovers
    "double precision",  # created_at
    "double precision",  # updated_at
)
_COLUMNS = (
    "run_id, thread_id, run_thread_id, graph_id, assistant_id, status, multitask_strategy, "
    "request, output, position, owner, attempt, takeovers, created_at, updated_at"
)


@dataclass
class StoredRun:
    """One run as the store keeps it; `request` is what was asked, as JSON."""

    run_id: str
    thread_id: str  # the thread the run was asked for
    graph_id: str
    assistant_id: str
    request: dict[str, Any]
    multitask_strategy: str = "reject"
    run_thread_id: str = ""  # the thread it runs on: a fork, for a run from a past checkpoint
    status: str = PENDING
    output: dict[str, Any] | None = None
    position: int | None = None
    owner: str | None = None
    attempt: int = 1
    takeovers: list[dict[str, Any]] = field(default_factory=list)
    created_at: float = field(default_factory=time.time)
    updated_at: float = 0.0

    def __post_init__(self) -> None:
        self.run_thread_id = self.run_thread_id or self.thread_id
        self.updated_at = self.updated_at or self.created_at

    @property
    def done(self) -> bool:
        return self.status in DONE

    def belongs_to(self, thread_id: str) -> bool:
        return thread_id in (self.thread_id, self.run_thread_id)

    def json(self) -> dict[str, Any]:
        """LangGraph's Run, with the run's attempts and takeovers."""
        return {
            "run_id": self.run_id,
            "thread_id": self.run_thread_id,
            "assistant_id": self.assistant_id,
            "created_at": _iso(self.created_at),
            "updated_at": _iso(self.updated_at),
            "status": self.status,
            "metadata": self.request.get("metadata") or {},
            "multitask_strategy": self.multitask_strategy,
            "kwargs": self.request.get("kwargs") or {},
            "langsmith_session_name": None,
            "attempt": self.attempt,
            "taken_over": [
                {**note, "at": _iso(note["at"]), "lease_expired_at": _iso(note["lease_expired_at"])}
                for note in self.takeovers
            ],
        }


@dataclass(frozen=True)
class Opened:
    """What `open` did: the run started (its lease held), queued, or neither, as the
    thread's lease is held by `holder` (a run id)."""

    started: bool
    queued: bool
    holder: str | None = None


@dataclass(frozen=True)
class Expired:
    """A running run whose runner let its lease expire."""

    run_id: str
    thread_id: str
    owner: str
    expired_at: float


def create_tables(cursor: Cursor, db: Database) -> None:
    """The runs and leases tables and their indexes, if missing."""
    runs, leases = db.table(RUNS), db.table(LEASES)
    cursor.execute(
        f"CREATE TABLE IF NOT EXISTS {runs} ("
        "run_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL, run_thread_id TEXT NOT NULL, "
        "graph_id TEXT NOT NULL, assistant_id TEXT NOT NULL, status TEXT NOT NULL, "
        "multitask_strategy TEXT NOT NULL, request TEXT NOT NULL, output TEXT, "
        "position BIGINT, owner TEXT, attempt INTEGER NOT NULL, takeovers TEXT NOT NULL, "
        "created_at DOUBLE PRECISION NOT NULL, updated_at DOUBLE PRECISION NOT NULL)"
    )
    cursor.execute(f"CREATE INDEX IF NOT EXISTS {RUNS}_thread ON {runs} (thread_id, created_at)")
    cursor.execute(f"CREATE INDEX IF NOT EXISTS {RUNS}_status ON {runs} (status, created_at)")
    cursor.execute(
        f"CREATE TABLE IF NOT EXISTS {leases} ("
        "thread_id TEXT PRIMARY KEY, run_id TEXT NOT NULL, owner TEXT NOT NULL, "
        "expires_at DOUBLE PRECISION NOT NULL)"
    )
    cursor.execute(f"CREATE INDEX IF NOT EXISTS {LEASES}_owner ON {leases} (owner)")


class RunStore:
    """The runs and leases of one store, through its database."""

    def __init__(self, db: Database, *, create: bool = True) -> None:
        self.db = db
        # Whether the store's recorder takes commit guards (`guard`, `end_guard`): on
        # PostgreSQL; on SQLite a lease is a local write, and memory has no SQL recorder.
        self.guards = db.dialect == "postgres"
        self._runs, self._leases = db.table(RUNS), db.table(LEASES)
        self._now = NOW[db.dialect]
        if create:
            with db.transaction() as cursor:
                create_tables(cursor, db)

    # -- writing -------------------------------------------------------

    def open(
        self,
        run: StoredRun,
        owner: str,
        ttl: float,
        *,
        enqueue: bool,
        durable: bool = False,
        delayed: bool = False,
    ) -> Opened:
        """Record `run` and claim its thread for `owner`, in one transaction: started
        (running, the lease held for `ttl` s) if no live lease holds the thread; else
        queued (pending) with `enqueue`, or not recorded at all, naming the holder.

        `durable`: on PostgreSQL the commit waits for the WAL to reach the disk. A run
        that records its input or answer before any node runs needs no such wait (that
        commit makes the lease durable with it); a continue, which records nothing
        first, does. `delayed`: queued whatever holds the thread (a run for later).
        RunExistsError, nothing recorded, when a run with its id is recorded already."""
        try:
            return self._open(run, owner, ttl, enqueue=enqueue, durable=durable, delayed=delayed)
        except self.db.duplicate_key:
            if self.get(run.run_id) is None:
                raise  # another key than the run's
            raise RunExistsError(run.run_id) from None

    def _open(
        self, run: StoredRun, owner: str, ttl: float, *, enqueue: bool, durable: bool, delayed: bool
    ) -> Opened:
        if not enqueue and not durable and self.db.dialect == "postgres":
            return self._open_at_once(run, owner, ttl)
        with self.db.transaction() as cursor:
            if durable and self.db.dialect == "postgres":
                cursor.execute("SET LOCAL synchronous_commit TO on")
            if delayed or (enqueue and self._queued_before(cursor, run.run_thread_id)):
                self._insert(cursor, run, PENDING, None)  # behind the runs already waiting
                return Opened(started=False, queued=True)
            if self._claim(cursor, run.run_thread_id, run.run_id, owner, ttl):
                self._insert(cursor, run, RUNNING, owner)
                return Opened(started=True, queued=False)
            if enqueue:
                self._insert(cursor, run, PENDING, None)
                return Opened(started=False, queued=True)
            return Opened(started=False, queued=False, holder=self._holder(cursor, run))

    def _open_at_once(self, run: StoredRun, owner: str, ttl: float) -> Opened:
        """`open` without a queue on PostgreSQL: the lease claimed and the run recorded in
        one statement, one round trip."""
        claim = self._claim_at_once(run, owner, ttl)
        if self.db.statement(f"WITH {claim.ctes} SELECT run_id FROM guard", claim.params):
            return Opened(started=True, queued=False)
        run.status, run.owner = PENDING, None
        return Opened(started=False, queued=False, holder=self._lease_holder(run.run_thread_id))

    def guard(self, run: StoredRun, owner: str, ttl: float) -> CommitGuard | None:
        """`open` without a queue, as a guard for the commit of the run's input or answer
        (`persistence.commit_guard`): the lease claimed, the run recorded and its first
        events appended in one statement. None where the recorder takes no guard
        (`guards`): `open` then."""
        return self._claim_at_once(run, owner, ttl) if self.guards else None

    def _claim_at_once(self, run: StoredRun, owner: str, ttl: float) -> CommitGuard:
        """The claim of `_open_at_once` as expressions, the one named `guard` yielding the
        run's id if the lease was taken."""
        typed = ", ".join(f"%s::{kind}" for kind in _COLUMN_TYPES)
        run.status, run.owner = RUNNING, owner
        return CommitGuard(
            f"claimed AS ({self._claim_sql()} RETURNING l.thread_id), "
            f"guard AS (INSERT INTO {self._runs} ({_COLUMNS}) SELECT {typed} FROM claimed "
            "RETURNING run_id)",
            (run.run_thread_id, run.run_id, owner, ttl, *_row(run)),
        )

    def move(self, run_id: str, owner: str, thread_id: str, ttl: float) -> bool:
        """A run that forked its thread runs on the fork, `thread_id`: claim the fork's
        lease too and note it on the run's row, in one transaction; False (nothing
        written) if another run holds the fork."""
        with self.db.transaction() as cursor:
            if not self._claim(cursor, thread_id, run_id, owner, ttl):
                return False
            cursor.execute(
                f"UPDATE {self._runs} SET run_thread_id = %s, updated_at = %s "
                "WHERE run_id = %s AND owner = %s",
                (thread_id, time.time(), run_id, owner),
            )
        return True

    def hold(self, thread_id: str, holder: str, owner: str, ttl: float) -> bool:
        """Take the thread's lease for a change that is not a run (`holder`: a human's
        edit), as a run takes it; False (nothing written) while a run or another edit
        holds it. The holder has no row of its own: a lease it leaves behind (its process
        died) expires, and the next claim takes it over."""
        with self.db.transaction() as cursor:
            return self._claim(cursor, thread_id, holder, owner, ttl)

    def let_go(self, thread_id: str, holder: str, owner: str) -> None:
        """Free a lease taken with `hold`."""
        with self.db.transaction() as cursor:
            self._release(cursor, thread_id, holder, owner)

    def discard(self, run_id: str, thread_id: str, owner: str) -> None:
        """Forget a run that never began (its input refused, nothing recorded) and free
        its thread."""
        with self.db.transaction() as cursor:
            cursor.execute(f"DELETE FROM {self._runs} WHERE run_id = %s", (run_id,))
            self._release(cursor, thread_id, run_id, owner)

    def finish(
        self,
        run_id: str,
        thread_id: str,
        owner: str,
        status: str,
        output: dict[str, Any],
        position: int | None,
        run_thread_id: str | None = None,
    ) -> bool:
        """Record how the run ended and free its thread; False (nothing written) if
        another runner has taken the run over meanwhile."""
        if self.db.dialect == "postgres":  # one statement, one round trip
            rows = self.db.statement(
                f"WITH done AS (UPDATE {self._runs} SET status = %s, output = %s, "
                "position = %s::bigint, run_thread_id = %s, updated_at = %s "
                "WHERE run_id = %s AND owner = %s RETURNING run_id), "
                f"released AS (DELETE FROM {self._leases} WHERE thread_id IN (%s, %s) "
                "AND owner = %s AND run_id IN (SELECT run_id FROM done) RETURNING 1) "
                "SELECT count(*) FROM done",
                (
                    status,
                    json.dumps(output),
                    position,
                    run_thread_id or thread_id,
                    time.time(),
                    run_id,
                    owner,
                    thread_id,
                    run_thread_id or thread_id,
                    owner,
                ),
            )
            return bool(rows[0][0] == 1)
        with self.db.transaction() as cursor:
            cursor.execute(
                f"UPDATE {self._runs} SET status = %s, output = %s, position = %s, "
                "run_thread_id = %s, updated_at = %s WHERE run_id = %s AND owner = %s",
                (
                    status,
                    json.dumps(output),
                    position,
                    run_thread_id or thread_id,
                    time.time(),
                    run_id,
                    owner,
                ),
            )
            if cursor.rowcount != 1:
                return False
            self._release(cursor, thread_id, run_id, owner)
            if run_thread_id and run_thread_id != thread_id:
                self._release(cursor, run_thread_id, run_id, owner)
            return True

    def end_guard(
        self,
        run_id: str,
        thread_id: str,
        owner: str,
        output: dict[str, Any],
        run_thread_id: str,
    ) -> CommitGuard:
        """`finish` (a success, at the last position appended) as a guard for the commit of
        the run's last step (`persistence.commit_guard`), where the recorder takes guards
        (`guards`): the step's events are written only while `owner` still holds the run,
        with its end, in one statement."""
        return CommitGuard(
            f"guard AS (SELECT run_id FROM {self._runs} WHERE run_id = %s AND owner = %s "
            "FOR UPDATE)",
            (run_id, owner),
            after=(
                f"done AS (UPDATE {self._runs} SET status = %s, output = %s, "
                "position = (SELECT max(id) FROM appended), "
                "run_thread_id = %s, updated_at = %s "
                "WHERE run_id IN (SELECT run_id FROM guard) RETURNING run_id), "
                f"released AS (DELETE FROM {self._leases} WHERE thread_id IN (%s, %s) "
                "AND owner = %s AND run_id IN (SELECT run_id FROM done))"
            ),
            after_params=(
                SUCCESS,
                json.dumps(output),
                run_thread_id,
                time.time(),
                thread_id,
                run_thread_id,
                owner,
            ),
        )

    def renew(self, owner: str, run_ids: Sequence[str], ttl: float) -> set[str]:
        """Extend the leases `owner` holds for `run_ids` by `ttl` s from now, in one
        statement; the runs whose lease `owner` still holds (the others were taken over)."""
        if not run_ids:
            return set()
        marks = ", ".join(["%s"] * len(run_ids))
        with self.db.transaction() as cursor:
            cursor.execute(
                f"UPDATE {self._leases} SET expires_at = {self._now} + %s "
                f"WHERE owner = %s AND run_id IN ({marks}) RETURNING run_id",
                (ttl, owner, *run_ids),
            )
            return {str(row[0]) for row in cursor.fetchall()}

    def claim_next(self, owner: str, ttl: float, graph_ids: Sequence[str]) -> StoredRun | None:
        """Take the oldest queued run of `graph_ids` whose thread is free and has no older
        run waiting: its lease claimed and its status running, or None. A run created in
        the future (`after_seconds`) waits until then."""
        if not graph_ids or not self._any_queued():
            return None
        lock = " FOR UPDATE OF r SKIP LOCKED" if self.db.dialect == "postgres" else ""
        graphs = ", ".join(["%s"] * len(graph_ids))
        with self.db.transaction() as cursor:
            if self.db.dialect == "postgres":  # the run may be a continue: see `open`
                cursor.execute("SET LOCAL synchronous_commit TO on")
            cursor.execute(
                f"SELECT r.run_id, r.run_thread_id FROM {self._runs} r WHERE r.status = %s "
                f"AND r.graph_id IN ({graphs}) AND r.created_at <= {self._now} + {CLOCK_SLACK} "
                f"AND NOT EXISTS (SELECT 1 FROM {self._leases} l WHERE "
                f"l.thread_id = r.run_thread_id AND l.expires_at > {self._now}) "
                f"AND NOT EXISTS (SELECT 1 FROM {self._runs} o WHERE o.status = %s "
                "AND o.run_thread_id = r.run_thread_id AND (o.created_at < r.created_at "
                "OR (o.created_at = r.created_at AND o.run_id < r.run_id))) "
                f"ORDER BY r.created_at, r.run_id LIMIT 8{lock}",
                (PENDING, *graph_ids, PENDING),
            )
            for run_id, thread_id in cursor.fetchall():
                if self._claim(cursor, str(thread_id), str(run_id), owner, ttl):
                    cursor.execute(
                        f"UPDATE {self._runs} SET status = %s, owner = %s, updated_at = %s "
                        "WHERE run_id = %s",
                        (RUNNING, owner, time.time(), run_id),
                    )
                    return self._get(cursor, str(run_id))
        return None

    def expired(self, graph_ids: Sequence[str]) -> list[Expired]:
        """Running runs of `graph_ids` whose lease has expired (their runner died, stalled
        or lost the store)."""
        if not graph_ids:
            return []
        graphs = ", ".join(["%s"] * len(graph_ids))
        with self.db.transaction(write=False) as cursor:
            cursor.execute(
                f"SELECT r.run_id, r.run_thread_id, l.owner, l.expires_at FROM {self._runs} r "
                f"JOIN {self._leases} l ON l.thread_id = r.run_thread_id AND l.run_id = r.run_id "
                f"WHERE r.status = %s AND r.graph_id IN ({graphs}) "
                f"AND l.expires_at < {self._now}",
                (RUNNING, *graph_ids),
            )
            return [
                Expired(str(run_id), str(thread_id), str(owner), float(at))
                for run_id, thread_id, owner, at in cursor.fetchall()
            ]

    def take_over(self, expired: Expired, owner: str, ttl: float) -> StoredRun | None:
        """Claim an expired run for `owner`: its lease renewed in `owner`'s name, its
        attempt counted and the takeover noted on the row; None if another runner was
        first (or the runner came back)."""
        with self.db.transaction() as cursor:
            cursor.execute(
                f"UPDATE {self._leases} SET owner = %s, expires_at = {self._now} + %s "
                f"WHERE thread_id = %s AND run_id = %s AND owner = %s "
                f"AND expires_at < {self._now}",
                (owner, ttl, expired.thread_id, expired.run_id, expired.owner),
            )
            if cursor.rowcount != 1:
                return None
            run = self._get(cursor, expired.run_id)
            assert run is not None, "a lease names only recorded runs"
            note = {
                "at": time.time(),
                "runner": owner,
                "previous_runner": expired.owner,
                "lease_expired_at": expired.expired_at,
                "reason": "the previous runner's lease expired",
            }
            run.takeovers.append(note)
            run.attempt += 1
            run.owner = owner
            cursor.execute(
                f"UPDATE {self._runs} SET owner = %s, attempt = %s, takeovers = %s, "
                "updated_at = %s WHERE run_id = %s",
                (owner, run.attempt, json.dumps(run.takeovers), time.time(), run.run_id),
            )
            return run

    def request_cancel(self, run_id: str, request: dict[str, Any]) -> StoredRun | None:
        """Ask that the run stop (`request`: who asks, and why); the run as it was, or None
        if there is no such run. A queued run is cancelled at once (`interrupted`, the
        request as its output); a running one keeps running until its runner, here or in
        another process, sees the request (`cancel_requests`) at a step's end, records
        RunCancelled and ends it; an ended one is left as it is."""
        with self.db.transaction() as cursor:
            run = self._get(cursor, run_id)
            if run is None or run.done:
                return run
            marked = json.dumps({CANCEL: request})
            cursor.execute(
                f"UPDATE {self._runs} SET status = %s, output = %s, updated_at = %s "
                "WHERE run_id = %s AND status = %s",
                (INTERRUPTED, marked, time.time(), run_id, PENDING),
            )
            if cursor.rowcount != 1:  # running, or claimed by a runner since it was read
                run.status = RUNNING
                cursor.execute(
                    f"UPDATE {self._runs} SET output = %s WHERE run_id = %s AND status = %s "
                    "AND output IS NULL",
                    (marked, run_id, RUNNING),
                )
            return run

    def delete(self, run_id: str) -> None:
        """Forget a run that has ended: its row (its events stay on its thread)."""
        statuses = ", ".join(["%s"] * len(DONE))
        self.db.statement(
            f"DELETE FROM {self._runs} WHERE run_id = %s AND status IN ({statuses}) "
            "RETURNING run_id",
            (run_id, *DONE),
        )

    def cancel_requests(self, run_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The cancels asked of these running runs, by run."""
        if not run_ids:
            return {}
        marks = ", ".join(["%s"] * len(run_ids))
        rows = self.db.statement(
            f"SELECT run_id, output FROM {self._runs} WHERE run_id IN ({marks}) "
            "AND status = %s AND output IS NOT NULL",
            (*run_ids, RUNNING),
            write=False,
        )
        asked = {str(run_id): json.loads(output) for run_id, output in rows}
        return {run_id: found[CANCEL] for run_id, found in asked.items() if CANCEL in found}

    # -- reading -------------------------------------------------------

    def get(self, run_id: str) -> StoredRun | None:
        rows = self.db.statement(
            f"SELECT {_COLUMNS} FROM {self._runs} WHERE run_id = %s", (run_id,), write=False
        )
        return _stored(rows[0]) if rows else None

    def of_thread(
        self, thread_id: str, *, limit: int, offset: int = 0, status: str | None = None
    ) -> list[StoredRun]:
        """The thread's runs, newest first."""
        where, params = "thread_id = %s", [thread_id]
        if status is not None:
            where, params = where + " AND status = %s", [thread_id, status]
        rows = self.db.statement(
            f"SELECT {_COLUMNS} FROM {self._runs} WHERE {where} "
            "ORDER BY created_at DESC, run_id DESC LIMIT %s OFFSET %s",
            (*params, limit, offset),
            write=False,
        )
        return [_stored(row) for row in rows]

    def holder(self, thread_id: str) -> str | None:
        """The run whose live lease holds the thread, if one does."""
        rows = self.db.statement(
            f"SELECT run_id FROM {self._leases} WHERE thread_id = %s AND expires_at > {self._now}",
            (thread_id,),
            write=False,
        )
        return str(rows[0][0]) if rows else None

    def close(self) -> None:
        self.db.close()

    # -- statements ----------------------------------------------------

    def _claim(self, cursor: Cursor, thread_id: str, run_id: str, owner: str, ttl: float) -> bool:
        """Take the thread's lease for `run_id` unless a live one holds it."""
        cursor.execute(self._claim_sql(), (thread_id, run_id, owner, ttl))
        return bool(cursor.rowcount == 1)

    def _claim_sql(self) -> str:
        """The upsert that takes a thread's lease (thread, run, owner, seconds): over no
        lease, or an expired one whose run is not still running (that run is taken over,
        by `take_over`, not overtaken)."""
        return (
            f"INSERT INTO {self._leases} AS l (thread_id, run_id, owner, expires_at) "
            f"VALUES (%s, %s, %s, {self._now} + %s) ON CONFLICT (thread_id) DO UPDATE SET "
            "run_id = excluded.run_id, owner = excluded.owner, expires_at = excluded.expires_at "
            f"WHERE l.expires_at < {self._now} AND NOT EXISTS (SELECT 1 FROM {self._runs} r "
            "WHERE r.run_id = l.run_id AND r.status = 'running')"
        )

    def _lease_holder(self, thread_id: str) -> str | None:
        """The run whose lease (live or expired) the thread has."""
        rows = self.db.statement(
            f"SELECT run_id FROM {self._leases} WHERE thread_id = %s", (thread_id,), write=False
        )
        return str(rows[0][0]) if rows else None

    def _release(self, cursor: Cursor, thread_id: str, run_id: str, owner: str) -> None:
        cursor.execute(
            f"DELETE FROM {self._leases} WHERE thread_id = %s AND run_id = %s AND owner = %s",
            (thread_id, run_id, owner),
        )

    def _any_queued(self) -> bool:
        """Whether any run waits in the queue: a read, before a claim's write lock."""
        rows = self.db.statement(
            f"SELECT 1 FROM {self._runs} WHERE status = %s LIMIT 1", (PENDING,), write=False
        )
        return bool(rows)

    def _queued_before(self, cursor: Cursor, thread_id: str) -> bool:
        cursor.execute(
            f"SELECT 1 FROM {self._runs} WHERE run_thread_id = %s AND status = %s LIMIT 1",
            (thread_id, PENDING),
        )
        return cursor.fetchone() is not None

    def _holder(self, cursor: Cursor, run: StoredRun) -> str | None:
        cursor.execute(
            f"SELECT run_id FROM {self._leases} WHERE thread_id = %s", (run.run_thread_id,)
        )
        row = cursor.fetchone()
        return None if row is None else str(row[0])

    def _insert(self, cursor: Cursor, run: StoredRun, status: str, owner: str | None) -> None:
        run.status, run.owner = status, owner
        cursor.execute(
            f"INSERT INTO {self._runs} ({_COLUMNS}) VALUES ({', '.join(['%s'] * 15)})",
            _row(run),
        )

    def _get(self, cursor: Cursor, run_id: str) -> StoredRun | None:
        cursor.execute(f"SELECT {_COLUMNS} FROM {self._runs} WHERE run_id = %s", (run_id,))
        row = cursor.fetchone()
        return None if row is None else _stored(row)


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat()


def _row(run: StoredRun) -> Sequence[Any]:
    return (
        run.run_id,
        run.thread_id,
        run.run_thread_id,
        run.graph_id,
        run.assistant_id,
        run.status,
        run.multitask_strategy,
        json.dumps(run.request),
        None if run.output is None else json.dumps(run.output),
        run.position,
        run.owner,
        run.attempt,
        json.dumps(run.takeovers),
        run.created_at,
        run.updated_at,
    )


def _stored(row: Sequence[Any]) -> StoredRun:
    (
        run_id,
        thread_id,
        run_thread_id,
        graph_id,
        assistant_id,
        status,
        strategy,
        request,
        output,
        position,
        owner,
        attempt,
        takeovers,
        created_at,
        updated_at,
    ) = row
    return StoredRun(
        run_id=str(run_id),
        thread_id=str(thread_id),
        run_thread_id=str(run_thread_id),
        graph_id=str(graph_id),
        assistant_id=str(assistant_id),
        request=json.loads(request),
        multitask_strategy=str(strategy),
        status=str(status),
        output=None if output is None else json.loads(output),
        position=None if position is None else int(position),
        owner=None if owner is None else str(owner),
        attempt=int(attempt),
        takeovers=json.loads(takeovers),
        created_at=float(created_at),
        updated_at=float(updated_at),
    )
