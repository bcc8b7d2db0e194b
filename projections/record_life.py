"""The record's life as a read model: legal holds, incidents and purges, for the oversight
report, the queue and a thread's pages (a hold shows wherever its thread does).

Few rows and rare events: each event is one INSERT or UPDATE, none reads, so that a
batch staged on SQLite (written after it is worked out) applies in order.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from domain.retention.incidents import IncidentRegister
from domain.retention.legal_holds import LegalHolds
from domain.retention.purge_ledger import PurgeLedger
from domain.retention.scope import Scope
from projections.database import Cursor, Database
from projections.log_reader import Entry
from projections.projection import Projection

HOLDS = "holdpoint_legal_holds"
INCIDENTS = "holdpoint_incidents"
PURGES = "holdpoint_purges"


class RecordLifeProjection(Projection):
    name = "record_life"
    tables = (HOLDS, INCIDENTS, PURGES)
    event_classes = (
        LegalHolds.LegalHoldPlaced,
        LegalHolds.LegalHoldLifted,
        IncidentRegister.IncidentOpened,
        IncidentRegister.IncidentClosed,
        PurgeLedger.ThreadsPurged,
    )

    def create_tables(self, cursor: Cursor, db: Database) -> None:
        cursor.execute(
            f"CREATE TABLE IF NOT EXISTS {db.table(HOLDS)} (hold_id TEXT PRIMARY KEY, "
            "scope TEXT NOT NULL, placed_by TEXT, placed_at TEXT NOT NULL, reason TEXT NOT NULL, "
            "lifted_by TEXT, lifted_at TEXT, lift_reason TEXT)"
        )
        cursor.execute(
            f"CREATE TABLE IF NOT EXISTS {db.table(INCIDENTS)} (incident_id TEXT PRIMARY KEY, "
            "threads TEXT NOT NULL, reason TEXT NOT NULL, opened_by TEXT, opened_at TEXT NOT NULL, "
            "sealed_at BIGINT NOT NULL, holds TEXT NOT NULL, outcome TEXT, closed_by TEXT, "
            "closed_at TEXT)"
        )
        cursor.execute(
            f"CREATE TABLE IF NOT EXISTS {db.table(PURGES)} (operation BIGINT PRIMARY KEY, "
            "at TEXT NOT NULL, purged_by TEXT, sealed_at BIGINT NOT NULL, threads TEXT NOT NULL, "
            "events INTEGER NOT NULL)"
        )

    def clear(self, cursor: Cursor, db: Database) -> None:
        for table in self.tables:
            db.clear_table(cursor, db.table(table))

    def apply_batch(self, entries: Sequence[Entry], cursor: Cursor, db: Database) -> None:
        for entry in entries:
            event, at = entry.event, entry.at
            who = event.actor.get("id")
            if entry.cls is LegalHolds.LegalHoldPlaced:
                cursor.execute(
                    f"INSERT INTO {db.table(HOLDS)} (hold_id, scope, placed_by, placed_at, reason) "
                    "VALUES (%s, %s, %s, %s, %s)",
                    (event.hold_id, json.dumps(event.scope), who, at, event.reason),
                )
            elif entry.cls is LegalHolds.LegalHoldLifted:
                cursor.execute(
                    f"UPDATE {db.table(HOLDS)} SET lifted_by = %s, lifted_at = %s, "
                    "lift_reason = %s WHERE hold_id = %s",
                    (who, at, event.reason, event.hold_id),
                )
            elif entry.cls is IncidentRegister.IncidentOpened:
                cursor.execute(
                    f"INSERT INTO {db.table(INCIDENTS)} (incident_id, threads, reason, opened_by, "
                    "opened_at, sealed_at, holds) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                    (
                        event.incident_id,
                        json.dumps(event.thread_ids),
                        event.reason,
                        who,
                        at,
                        event.sealed_at,
                        json.dumps(event.holds),
                    ),
                )
            elif entry.cls is IncidentRegister.IncidentClosed:
                cursor.execute(
                    f"UPDATE {db.table(INCIDENTS)} SET outcome = %s, closed_by = %s, "
                    "closed_at = %s WHERE incident_id = %s",
                    (event.outcome, who, at, event.incident_id),
                )
            else:
                threads = [t["thread_id"] for t in event.threads]
                cursor.execute(
                    f"INSERT INTO {db.table(PURGES)} (operation, at, purged_by, sealed_at, "
                    "threads, events) VALUES (%s, %s, %s, %s, %s, %s)",
                    (
                        event.operation,
                        at,
                        who,
                        event.sealed_at,
                        json.dumps(threads),
                        sum(len(t["events"]) for t in event.threads),
                    ),
                )


def holds_in_place(db: Database) -> list[dict[str, Any]]:
    """The legal holds in place, oldest first."""
    with db.transaction(write=False) as cursor:
        cursor.execute(
            f"SELECT hold_id, scope, placed_by, placed_at, reason FROM {db.table(HOLDS)} "
            "WHERE lifted_at IS NULL ORDER BY placed_at, hold_id"
        )
        rows = cursor.fetchall()
    return [
        {"hold_id": h, "scope": str(Scope.from_json(json.loads(s))), "placed_by": by,
         "placed_at": at, "reason": why}
        for h, s, by, at, why in map(_values, rows)
    ]  # fmt: skip


def record_figures(db: Database, since: str, until: str) -> dict[str, Any]:
    """The oversight report's sections on the record's life in [since, until): holds in
    place, incidents opened in the period or still open, and purges in the period."""
    holds = holds_in_place(db)
    with db.transaction(write=False) as cursor:
        cursor.execute(
            f"SELECT incident_id, threads, reason, opened_by, opened_at, sealed_at, outcome, "
            f"closed_at FROM {db.table(INCIDENTS)} WHERE (opened_at >= %s AND opened_at < %s) "
            "OR closed_at IS NULL ORDER BY opened_at, incident_id",
            (since, until),
        )
        incidents = [
            {"incident_id": i, "threads": json.loads(t), "reason": why, "opened_by": by,
             "opened_at": at, "sealed_at": sealed, "outcome": outcome, "closed_at": closed}
            for i, t, why, by, at, sealed, outcome, closed in map(_values, cursor.fetchall())
        ]  # fmt: skip
        cursor.execute(
            f"SELECT operation, at, purged_by, sealed_at, threads, events FROM "
            f"{db.table(PURGES)} WHERE at >= %s AND at < %s ORDER BY operation",
            (since, until),
        )
        purges = [
            {"operation": op, "at": at, "purged_by": by, "sealed_at": sealed,
             "threads": len(json.loads(t)), "events": events}
            for op, at, by, sealed, t, events in map(_values, cursor.fetchall())
        ]  # fmt: skip
    return {
        "legal_holds": {
            "value": len(holds),
            "items": holds,
            "how": "legal holds in place at generated_at: a held thread is never purged",
        },
        "incidents": {
            "value": len(incidents),
            "items": incidents,
            "how": (
                "incidents (Art. 26(5), 73) opened in the period or still open: each sealed "
                "the log, exported its threads' bundles and held them (`holdpoint incident`)"
            ),
        },
        "purges": {
            "value": len(purges),
            "items": purges,
            "how": (
                "purges by the retention policies in the period (`holdpoint retention "
                "apply`), each sealed before and after, with the threads and events removed"
            ),
        },
    }


def _values(row: Any) -> tuple[Any, ...]:
    return tuple(row.values()) if isinstance(row, dict) else tuple(row)
