"""The deliveries table: one row per message to send, with every attempt on it.

A row is made once per (event, target), whatever the number of server processes
(its `dedupe` key is unique); a run's webhook is made with the run, `waiting` until
the run ends. A process claims a row due for sending with a lease on it (a crashed
sender's row is claimed again once the lease ran out), sends it, and writes the
attempt: `delivered`; `pending` again, due after a backoff; `failed` once the
receiver refused it or the attempts ran out; or `refused` when its host may not be
called. The log's position up to which notices were made is kept beside them.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from projections.database import Cursor, Database
from projections.timestamps import utc_text
from service.run_store import DONE, NOW, RUNS

DELIVERIES = "holdpoint_deliveries"
NOTIFIER = "holdpoint_notifier"
WAITING, PENDING, DELIVERED, FAILED, REFUSED = (
    "waiting",
    "pending",
    "delivered",
    "failed",
    "refused",
)
STATUSES = (WAITING, PENDING, DELIVERED, FAILED, REFUSED)
RUN_WEBHOOK = "run"  # the target of a run's own webhook
COLUMNS = (
    "delivery_id, dedupe, target, kind, event, url, body, run_id, status, attempts, "
    "next_at, lease_until, attempt_log, created_at, updated_at"
)


def create_tables(cursor: Cursor, db: Database) -> None:
    deliveries, notifier = db.table(DELIVERIES), db.table(NOTIFIER)
    cursor.execute(
        f"CREATE TABLE IF NOT EXISTS {deliveries} ("
        "delivery_id TEXT PRIMARY KEY, dedupe TEXT NOT NULL UNIQUE, target TEXT NOT NULL, "
        "kind TEXT NOT NULL, event TEXT NOT NULL, url TEXT NOT NULL, body TEXT, run_id TEXT, "
        "status TEXT NOT NULL, attempts INTEGER NOT NULL, next_at DOUBLE PRECISION NOT NULL, "
        "lease_until DOUBLE PRECISION, attempt_log TEXT NOT NULL, "
        "created_at DOUBLE PRECISION NOT NULL, updated_at DOUBLE PRECISION NOT NULL)"
    )
    cursor.execute(f"CREATE INDEX IF NOT EXISTS {DELIVERIES}_due ON {deliveries} (status, next_at)")
    cursor.execute(f"CREATE INDEX IF NOT EXISTS {DELIVERIES}_made ON {deliveries} (created_at)")
    cursor.execute(
        f"CREATE TABLE IF NOT EXISTS {notifier} (name TEXT PRIMARY KEY, position BIGINT NOT NULL)"
    )


@dataclass
class Delivery:
    delivery_id: str
    dedupe: str
    target: str
    kind: str  # webhook, slack or run
    event: str
    url: str
    body: dict[str, Any] | None  # None for a run's webhook: made when it is sent
    run_id: str | None = None
    status: str = PENDING
    attempts: int = 0
    next_at: float = field(default_factory=time.time)
    lease_until: float | None = None
    attempt_log: list[dict[str, Any]] = field(default_factory=list)
    created_at: float = field(default_factory=time.time)
    updated_at: float = 0.0

    def json(self) -> dict[str, Any]:
        return {
            "delivery_id": self.delivery_id,
            "target": self.target,
            "kind": self.kind,
            "event": self.event,
            "url": self.url,
            "run_id": self.run_id,
            "status": self.status,
            "attempts": self.attempts,
            "attempt_log": self.attempt_log,
            "created_at": _iso(self.created_at),
            "updated_at": _iso(self.updated_at or self.created_at),
        }


def new_delivery(
    dedupe: str,
    target: str,
    kind: str,
    event: str,
    url: str,
    body: dict[str, Any] | None,
    *,
    run_id: str | None = None,
    status: str = PENDING,
) -> Delivery:
    return Delivery(uuid.uuid4().hex, dedupe, target, kind, event, url, body, run_id, status)


class DeliveryStore:
    def __init__(self, db: Database, *, create: bool = True) -> None:
        self.db = db
        self._table, self._notifier = db.table(DELIVERIES), db.table(NOTIFIER)
        self._now = NOW[db.dialect]
        if create:
            with db.transaction() as cursor:
                create_tables(cursor, db)

    # -- making deliveries ------------------------------------------------

    def add(self, cursor: Cursor, deliveries: list[Delivery]) -> None:
        """Insert the deliveries not made already (by their `dedupe` key)."""
        for delivery in deliveries:
            cursor.execute(
                f"INSERT INTO {self._table} ({COLUMNS}) VALUES "
                f"({', '.join(['%s'] * 15)}) ON CONFLICT (dedupe) DO NOTHING",
                _row(delivery),
            )

    def position(self, name: str) -> int | None:
        rows = self.db.statement(
            f"SELECT position FROM {self._notifier} WHERE name = %s", (name,), write=False
        )
        return int(rows[0][0]) if rows else None

    def made(self, name: str, deliveries: list[Delivery], position: int) -> None:
        """Add deliveries made from the log up to `position`, and move the mark there."""
        with self.db.transaction() as cursor:
            self.add(cursor, deliveries)
            cursor.execute(
                f"INSERT INTO {self._notifier} (name, position) VALUES (%s, %s) "
                "ON CONFLICT (name) DO UPDATE SET position = excluded.position "
                f"WHERE {self._notifier}.position < excluded.position",
                (name, position),
            )

    def release_ended_runs(self) -> int:
        """Make due the webhooks of runs that have ended; how many."""
        done = ", ".join(f"'{status}'" for status in DONE)
        with self.db.transaction() as cursor:
            cursor.execute(  # a lookup of each waiting row's run, by its key
                f"UPDATE {self._table} SET status = '{PENDING}', next_at = {self._now} "
                f"WHERE status = '{WAITING}' AND EXISTS (SELECT 1 FROM {self.db.table(RUNS)} r "
                f"WHERE r.run_id = {self._table}.run_id AND r.status IN ({done}))"
            )
            return cursor.rowcount

    # -- sending ----------------------------------------------------------

    def claim(self, lease_seconds: float, limit: int = 20) -> list[Delivery]:
        """Deliveries due now, each leased to this caller (none another holds)."""
        due = self.db.statement(
            f"SELECT {COLUMNS} FROM {self._table} WHERE status = '{PENDING}' "
            f"AND next_at <= {self._now} AND (lease_until IS NULL OR lease_until < {self._now}) "
            f"ORDER BY next_at LIMIT {int(limit)}",
            write=False,
        )
        claimed = []
        for row in due:
            delivery = _delivery(row)
            with self.db.transaction() as cursor:
                cursor.execute(
                    f"UPDATE {self._table} SET lease_until = {self._now} + %s "
                    "WHERE delivery_id = %s AND status = %s "
                    f"AND (lease_until IS NULL OR lease_until < {self._now})",
                    (lease_seconds, delivery.delivery_id, PENDING),
                )
                if cursor.rowcount == 1:
                    claimed.append(delivery)
        return claimed

    def attempted(
        self, delivery: Delivery, status: str, outcome: dict[str, Any], retry_in: float = 0.0
    ) -> None:
        """Write an attempt's outcome and the status it leaves the delivery in."""
        counted = outcome.get("attempted", True)
        log = [*delivery.attempt_log, {"at": _iso(time.time()), **outcome}]
        attempts = delivery.attempts + (1 if counted else 0)
        with self.db.transaction() as cursor:
            cursor.execute(
                f"UPDATE {self._table} SET status = %s, attempts = %s, attempt_log = %s, "
                f"next_at = {self._now} + %s, lease_until = NULL, updated_at = %s "
                "WHERE delivery_id = %s",
                (status, attempts, json.dumps(log), retry_in, time.time(), delivery.delivery_id),
            )
        delivery.status, delivery.attempts, delivery.attempt_log = status, attempts, log

    # -- reading ----------------------------------------------------------

    def get(self, delivery_id: str) -> Delivery | None:
        rows = self.db.statement(
            f"SELECT {COLUMNS} FROM {self._table} WHERE delivery_id = %s",
            (delivery_id,),
            write=False,
        )
        return _delivery(rows[0]) if rows else None

    def listed(
        self, *, status: str | None = None, target: str | None = None, limit: int = 100
    ) -> list[Delivery]:
        """The newest deliveries first, of a status or a target if given."""
        conditions, params = [], []
        if status is not None:
            conditions.append("status = %s")
            params.append(status)
        if target is not None:
            conditions.append("target = %s")
            params.append(target)
        where = f"WHERE {' AND '.join(conditions)} " if conditions else ""
        rows = self.db.statement(
            f"SELECT {COLUMNS} FROM {self._table} {where}"
            f"ORDER BY created_at DESC, delivery_id LIMIT {int(limit)}",
            params,
            write=False,
        )
        return [_delivery(row) for row in rows]


def _iso(seconds: float) -> str:
    return utc_text(datetime.fromtimestamp(seconds, UTC))


def _row(d: Delivery) -> tuple[Any, ...]:
    return (
        d.delivery_id,
        d.dedupe,
        d.target,
        d.kind,
        d.event,
        d.url,
        None if d.body is None else json.dumps(d.body),
        d.run_id,
        d.status,
        d.attempts,
        d.next_at,
        d.lease_until,
        json.dumps(d.attempt_log),
        d.created_at,
        d.updated_at,
    )


def _delivery(row: Any) -> Delivery:
    fields = dict(zip(Delivery.__dataclass_fields__, row, strict=True))
    fields["body"] = None if fields["body"] is None else json.loads(fields["body"])
    fields["attempt_log"] = json.loads(fields["attempt_log"])
    fields["attempts"] = int(fields["attempts"])
    for name in ("next_at", "created_at", "updated_at"):
        fields[name] = float(fields[name])
    if fields["lease_until"] is not None:
        fields["lease_until"] = float(fields["lease_until"])
    return Delivery(**fields)
