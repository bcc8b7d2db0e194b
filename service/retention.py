"""`holdpoint retention apply`: remove what the retention policies let go, as one
recorded, sealed operation.

In order, each step safe to crash after:
1. finish the last purge if a crash stopped it between its record and its deletes;
2. plan: the thread index (caught up) gives each thread's outcome and times, the
   policies and holds decide (`domain.retention.retention.plan`);
3. seal the log: every event about to leave it is covered by a seal;
4. record `ThreadsPurged` with each thread's head and each event's position and
   Merkle leaf (the holds are read again first);
5. delete, through the store's purge (a database function on PostgreSQL that only
   the owner may call, and that deletes only what the record names);
6. bring the read models up to date (the purge deletes the threads' rows) and seal
   again, over the log as it now is.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, cast
from uuid import UUID

import orjson
import structlog

from domain.errors import RetentionStateError
from domain.integrity.merkle import leaf_data, leaf_hash
from domain.oversight.policy_records import policy_in_force
from domain.record.application import Workflows
from domain.record.thread_uuids import thread_uuid
from domain.retention.policy import DEFAULT_FLOOR_DAYS, OUTCOMES
from domain.retention.purge_ledger import LEDGER_ID
from domain.retention.retention import Due, Plan, Retention
from domain.retention.scope import ThreadFacts
from integrity.scan import scanner_for
from integrity.sealing import make_seal
from projections.database import Database
from projections.thread_index import THREADS

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from projections.runner import ProjectionRunner

log = structlog.get_logger()
Say = Callable[[str], None]


class Purging(Protocol):
    """A recorder that can carry out a recorded purge (`persistence.sqlite`, `.postgres`)."""

    def purge(
        self,
        record: tuple[UUID, int],
        operation: int,
        targets: list[tuple[UUID, int]],
        snapshots: str | None,
    ) -> int: ...

    def may_purge(self) -> str | None: ...


@dataclass
class Outcome:
    """What an apply did: the plan, the purge recorded (its number), the events deleted,
    the seals made before and after (their positions), and a purge it finished."""

    plan: Plan
    operation: int | None = None
    deleted: int = 0
    seals: list[int] = field(default_factory=list)
    finished: int | None = None


def candidates(db: Database) -> Iterator[ThreadFacts]:
    """Threads whose outcome a policy may let go, from the thread index."""
    marks = ", ".join(["%s"] * len(OUTCOMES))
    with db.transaction(write=False) as cursor:
        cursor.execute(
            "SELECT thread_id, graph_id, status, created_at, updated_at, metadata, pending "
            f"FROM {db.table(THREADS)} WHERE status IN ({marks})",
            OUTCOMES,
        )
        rows = cursor.fetchall()
    for row in rows:
        values = tuple(row.values()) if isinstance(row, dict) else tuple(row)
        thread_id, graph_id, status, created, updated, metadata, pending = values
        yield ThreadFacts(
            thread_id, graph_id, status, created, updated, json.loads(metadata), int(pending)
        )


def floor_in_force(store: Workflows, configured: int = DEFAULT_FLOOR_DAYS) -> int:
    """The retention floor: the highest of `configured`, the one in the oversight policy
    on record (what the servers run under) and the default."""
    recorded = policy_in_force(store)
    on_record = 0 if recorded is None else recorded.policy.get("retention_floor_days", 0)
    return max(configured, on_record if isinstance(on_record, int) else 0, DEFAULT_FLOOR_DAYS)


def plan_purge(store: Workflows, runner: ProjectionRunner, now: datetime) -> Plan:
    runner.catch_up()
    return Retention(store).plan(candidates(runner.db), now, floor_in_force(store))


def apply_purge(
    store: Workflows,
    runner: ProjectionRunner,
    key: Ed25519PrivateKey,
    actor: dict[str, Any],
    now: datetime,
    say: Say = lambda _: None,
) -> Outcome:
    """Purge what is due at `now` (see the module's docstring)."""
    recorder = _purging(store)
    finished = _finish_interrupted(store, recorder, say)
    plan = plan_purge(store, runner, now)
    outcome = Outcome(plan, finished=finished)
    if not plan.due:
        return outcome
    say(f"sealing the log before the purge of {len(plan.due)} thread(s)")
    before = seal_log(store, key, actor)
    threads, targets = gathered(store, plan.due, before)
    operation, version = Retention(store).record_purge(threads, actor, before)
    say(f"purge {operation} recorded; deleting {sum(len(t['events']) for t in threads)} events")
    outcome.deleted = recorder.purge((LEDGER_ID, version), operation, targets, _snapshots(store))
    outcome.operation = operation
    runner.catch_up()
    say("sealing the log after the purge")
    outcome.seals = [before, seal_log(store, key, actor)]
    log.info("threads purged", operation=operation, threads=len(threads), events=outcome.deleted)
    return outcome


def _purging(store: Workflows) -> Purging:
    recorder = store.recorder
    if not hasattr(recorder, "purge"):
        msg = "a memory store keeps nothing past its process: there is nothing to purge"
        raise RetentionStateError(msg)
    purging = cast("Purging", recorder)
    role = purging.may_purge()
    if role is not None:
        msg = (
            f"the role {role} may not purge: run `holdpoint retention apply` as the role that "
            "owns the tables (nothing was sealed, recorded or deleted)"
        )
        raise RetentionStateError(msg)
    return purging


def _snapshots(store: Workflows) -> str | None:
    snapshots = store.snapshots
    return None if snapshots is None else str(snapshots.recorder.events_table_name)  # type: ignore[attr-defined]


def seal_log(store: Workflows, key: Ed25519PrivateKey, actor: dict[str, Any]) -> int:
    """Seal the log up to its head, by `actor`: the seal's position (RetentionStateError if
    the log does not verify)."""
    document, _, problems = make_seal(store, key, actor=actor)
    if document is None:
        listed = "; ".join(p.detail for p in problems[:3])
        msg = (
            f"the log does not verify, so it is not sealed and nothing is done: {listed} "
            "(run `holdpoint verify`)"
        )
        raise RetentionStateError(msg)
    return int(document["position"])


def gathered(
    store: Workflows, due: list[Due], sealed_at: int
) -> tuple[list[dict[str, Any]], list[tuple[UUID, int]]]:
    """Each due thread as the record lists it, and what the store deletes of it."""
    threads: list[dict[str, Any]] = []
    targets: list[tuple[UUID, int]] = []
    scanner = scanner_for(store)
    try:
        head = scanner.head()
        for item in due:
            aggregate = thread_uuid(item.thread.thread_id)
            rows = scanner.aggregate_rows(aggregate.hex, head)
            if not rows or rows[-1][0] > sealed_at:  # moved on since it was planned: kept
                continue
            last = rows[-1]
            threads.append(
                {
                    "facts": item.thread,
                    "thread_id": item.thread.thread_id,
                    "aggregate_id": aggregate.hex,
                    "graph_id": item.thread.graph_id,
                    "status": item.thread.status,
                    "policies": list(item.policies),
                    "due_at": item.due_at.isoformat(),
                    "head_version": last[2],
                    "head_hash": orjson.loads(last[4]).get("event_hash"),
                    "events": [
                        [position, leaf_hash(leaf_data(position, agg, ver, topic, state)).hex()]
                        for position, agg, ver, topic, state in rows
                    ],
                }
            )
            targets.append((aggregate, last[0]))
    finally:
        scanner.close()
    return threads, targets


def _finish_interrupted(store: Workflows, recorder: Purging, say: Say) -> int | None:
    """The last purge's deletes, done again if a crash stopped them: its number, or None."""
    purges = Retention(store).purges()
    if not purges:
        return None
    last = purges[-1]
    targets = [(UUID(t["aggregate_id"]), max(p for p, _ in t["events"])) for t in last.threads]
    scanner = scanner_for(store)
    try:
        left = any(scanner.aggregate_rows(a.hex, upto) for a, upto in targets)
    finally:
        scanner.close()
    if not left:
        return None
    say(f"finishing purge {last.operation}, which a crash interrupted")
    recorder.purge((LEDGER_ID, last.originator_version), last.operation, targets, _snapshots(store))
    return last.operation
