"""The crons' read model: each cron as its events leave it, with when it is next due,
for search and for the schedulers, which ask it for the crons due by now.

The next due time is worked out from the events alone (`domain/schedule/cron.py`'s
rule: after the last firing, or the time it fired if later, or the cron's making), so
that a rebuild gives the same rows.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from domain.schedule.cron import Cron, next_run
from projections.database import Cursor, Database
from projections.log_reader import Entry
from projections.projection import Projection
from projections.rows import ReaderIndex, Rows, TableShape, json_text
from projections.timestamps import parse_utc_text, utc_text

CRONS = "holdpoint_crons"
COLUMNS = (
    "originator_id",
    "cron_id",
    "graph_id",
    "thread_id",
    "schedule",
    "timezone",
    "end_time",
    "payload",
    "metadata",
    "enabled",
    "user_id",
    "fired_after",
    "next_run_date",
    "last_run_id",
    "last_fired_at",
    "created_at",
    "updated_at",
    "deleted",
    "position",
)
SHAPE = TableShape(CRONS, "originator_id", COLUMNS)
READER_INDEXES = (
    ReaderIndex(f"{CRONS}_due", CRONS, "(next_run_date) WHERE next_run_date IS NOT NULL"),
    ReaderIndex(f"{CRONS}_made", CRONS, "(created_at, cron_id)"),
    ReaderIndex(f"{CRONS}_fired", CRONS, "(last_fired_at) WHERE last_fired_at IS NOT NULL"),
)
SORT_KEYS = (
    "cron_id",
    "assistant_id",
    "thread_id",
    "next_run_date",
    "end_time",
    "created_at",
    "updated_at",
)


class CronIndexProjection(Projection):
    name = "cron_index"
    tables = (CRONS,)
    event_classes = (Cron.CronScheduled, Cron.CronUpdated, Cron.CronFired, Cron.CronDeleted)
    # (CronRunRecovered changes nothing here: the run it starts is the firing's)

    def create_tables(self, cursor: Cursor, db: Database) -> None:
        cursor.execute(
            f"CREATE TABLE IF NOT EXISTS {db.table(CRONS)} ("
            "originator_id TEXT PRIMARY KEY, cron_id TEXT NOT NULL UNIQUE, "
            "graph_id TEXT NOT NULL, thread_id TEXT, schedule TEXT NOT NULL, timezone TEXT, "
            "end_time TEXT, payload TEXT NOT NULL, metadata TEXT NOT NULL, "
            "enabled INTEGER NOT NULL, user_id TEXT, fired_after TEXT, next_run_date TEXT, "
            "last_run_id TEXT, last_fired_at TEXT, "
            "created_at TEXT NOT NULL, updated_at TEXT NOT NULL, deleted INTEGER NOT NULL, "
            "position BIGINT NOT NULL)"
        )
        for index in READER_INDEXES:
            index.create(cursor, db)

    def clear(self, cursor: Cursor, db: Database) -> None:
        for index in READER_INDEXES:
            index.drop(cursor, db)
        db.clear_table(cursor, db.table(CRONS))

    def apply_batch(self, entries: Sequence[Entry], cursor: Cursor, db: Database) -> None:
        rows = Rows(SHAPE)
        made = {e.key for e in entries if issubclass(e.cls, Cron.CronScheduled)}
        rows.load(cursor, db, "originator_id", {e.key for e in entries} - made)
        for entry in entries:
            event, at = entry.event, entry.at
            if issubclass(entry.cls, Cron.CronScheduled):
                rows.put(
                    {
                        "originator_id": entry.key,
                        "cron_id": event.cron_id,
                        "graph_id": event.graph_id,
                        "thread_id": event.thread_id,
                        "schedule": event.schedule,
                        "timezone": event.timezone,
                        "end_time": event.end_time,
                        "payload": json_text(event.payload),
                        "metadata": json_text(event.metadata),
                        "enabled": int(event.enabled),
                        "user_id": event.actor.get("id"),
                        "fired_after": None,
                        "last_run_id": None,
                        "last_fired_at": None,
                        "created_at": at,
                        "deleted": 0,
                    }
                )  # then as any event: its next due time, its time and position
            row = rows.get(entry.key)
            if row is None:
                continue  # its making could not be decoded (quarantined)
            if issubclass(entry.cls, Cron.CronUpdated):
                row.update({name: _column(name, v) for name, v in event.changes.items()})
            elif issubclass(entry.cls, Cron.CronFired):
                row["last_run_id"], row["last_fired_at"] = event.run_id, at
                row["fired_after"] = utc_text(
                    max(
                        datetime.fromisoformat(event.due_at), datetime.fromisoformat(event.fired_at)
                    )
                )
            elif issubclass(entry.cls, Cron.CronDeleted):
                row["deleted"] = 1
            row["next_run_date"] = _next_run_date(row)
            row["updated_at"], row["position"] = at, entry.position
        rows.write(cursor, db)


def _column(name: str, value: Any) -> Any:
    """A changed field as its column holds it."""
    if name in ("payload", "metadata"):
        return json_text(value)
    return int(value) if name == "enabled" else value


def _next_run_date(row: dict[str, Any]) -> str | None:
    if row["deleted"] or not row["enabled"]:
        return None
    after = parse_utc_text(row["fired_after"] or row["created_at"])
    due = next_run(row["schedule"], row["timezone"], row["end_time"], after)
    return None if due is None else utc_text(due)


@dataclass(frozen=True)
class CronRow:
    cron_id: str
    graph_id: str
    thread_id: str | None
    schedule: str
    timezone: str | None
    end_time: str | None
    payload: dict[str, Any]
    metadata: dict[str, Any]
    enabled: bool
    user_id: str | None
    next_run_date: str | None
    created_at: str
    updated_at: str


SELECTED = (
    "cron_id, graph_id, thread_id, schedule, timezone, end_time, payload, metadata, enabled, "
    "user_id, next_run_date, created_at, updated_at"
)


class CronIndex:
    def __init__(self, db: Database) -> None:
        self.db = db

    def due(self, now: datetime, limit: int = 100) -> list[str]:
        """The ids of the crons due by `now`, the longest due first."""
        rows = self.db.statement(
            f"SELECT cron_id FROM {self.db.table(CRONS)} WHERE next_run_date IS NOT NULL "
            f"AND next_run_date <= %s ORDER BY next_run_date LIMIT {int(limit)}",
            (utc_text(now),),
            write=False,
        )
        return [row[0] for row in rows]

    def fired_between(self, low: datetime, high: datetime) -> list[tuple[str, str]]:
        """(cron id, run id) of the crons whose last firing was recorded between the two."""
        rows = self.db.statement(
            f"SELECT cron_id, last_run_id FROM {self.db.table(CRONS)} "
            "WHERE last_fired_at >= %s AND last_fired_at <= %s ORDER BY last_fired_at",
            (utc_text(low), utc_text(high)),
            write=False,
        )
        return [(row[0], row[1]) for row in rows]

    def search(
        self,
        *,
        graph_id: str | None = None,
        thread_id: str | None = None,
        enabled: bool | None = None,
        sort_by: str = "created_at",
        descending: bool = True,
        limit: int = 10,
        offset: int = 0,
    ) -> list[CronRow]:
        where, params = self._where(graph_id, thread_id, enabled)
        column = "graph_id" if sort_by == "assistant_id" else sort_by
        order = "DESC" if descending else "ASC"
        rows = self.db.statement(
            f"SELECT {SELECTED} FROM {self.db.table(CRONS)} {where} "
            f"ORDER BY {column} {order}, cron_id {order} LIMIT {int(limit)} OFFSET {int(offset)}",
            params,
            write=False,
        )
        return [_cron_row(row) for row in rows]

    def count(self, *, graph_id: str | None = None, thread_id: str | None = None) -> int:
        where, params = self._where(graph_id, thread_id, None)
        rows = self.db.statement(
            f"SELECT COUNT(*) FROM {self.db.table(CRONS)} {where}", params, write=False
        )
        return int(rows[0][0])

    @staticmethod
    def _where(
        graph_id: str | None, thread_id: str | None, enabled: bool | None
    ) -> tuple[str, list[Any]]:
        conditions: list[str] = ["deleted = 0"]
        params: list[Any] = []
        for column, value in (("graph_id", graph_id), ("thread_id", thread_id)):
            if value is not None:
                conditions.append(f"{column} = %s")
                params.append(value)
        if enabled is not None:
            conditions.append("enabled = %s")
            params.append(int(enabled))
        return "WHERE " + " AND ".join(conditions), params


def _cron_row(row: Sequence[Any]) -> CronRow:
    fields = dict(zip(CronRow.__dataclass_fields__, row, strict=True))
    fields["payload"], fields["metadata"] = (
        json.loads(fields["payload"]),
        json.loads(fields["metadata"]),
    )
    fields["enabled"] = bool(fields["enabled"])
    return CronRow(**fields)
