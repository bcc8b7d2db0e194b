"""The change log: every recorded change that belongs to no thread, in log order, for
auditors (`GET /audit/changes`): the memory store's writes and deletions, crons made,
changed, fired, taken up and deleted, assistants made, changed, set back and deleted.
A thread's own changes are in its audit timeline (`GET /threads/{id}/audit`).

Each row names what changed (`subject`: a memory item's namespace and key, a cron's or
an assistant's id), who changed it (none for a cron's firing: the scheduler fires it as
its maker) and what the event says besides.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from domain.assistants.assistant import Assistant
from domain.memory.item import MemoryItem
from domain.schedule.cron import Cron
from projections.database import Cursor, Database
from projections.log_reader import Entry
from projections.projection import Projection
from projections.rows import ReaderIndex, TableShape, json_text, select_in

CHANGES = "holdpoint_change_log"
KINDS: dict[type, str] = {
    MemoryItem.ItemStored: "memory",
    MemoryItem.ItemChanged: "memory",
    MemoryItem.ItemDeleted: "memory",
    Cron.CronScheduled: "cron",
    Cron.CronUpdated: "cron",
    Cron.CronFired: "cron",
    Cron.CronRunRecovered: "cron",
    Cron.CronDeleted: "cron",
    Assistant.AssistantCreated: "assistant",
    Assistant.AssistantUpdated: "assistant",
    Assistant.LatestVersionSelected: "assistant",
    Assistant.AssistantDeleted: "assistant",
}
# An event's fields that the row has apart, or that say nothing of the change
APART = frozenset({"originator_id", "originator_version", "timestamp", "actor"})
SHAPE = TableShape(
    CHANGES,
    "position",
    (
        "position",
        "originator_id",
        "at",
        "kind",
        "subject",
        "event",
        "actor_id",
        "actor_role",
        "detail",
    ),
)
READER_INDEXES = (
    ReaderIndex(f"{CHANGES}_kind", CHANGES, "(kind, position)"),
    ReaderIndex(f"{CHANGES}_actor", CHANGES, "(actor_id, position)"),
)


def subject_of(event: Any) -> str | None:
    """What a first event names: an item's namespace and key, a cron's, an assistant's id."""
    if isinstance(event, MemoryItem.ItemStored):
        return f"{'.'.join(event.namespace)}/{event.key}"
    if isinstance(event, Cron.CronScheduled):
        return str(event.cron_id)
    if isinstance(event, Assistant.AssistantCreated):
        return str(event.assistant_id)
    return None


class ChangeLogProjection(Projection):
    name = "change_log"
    tables = (CHANGES,)
    event_classes = tuple(KINDS)

    def create_tables(self, cursor: Cursor, db: Database) -> None:
        cursor.execute(
            f"CREATE TABLE IF NOT EXISTS {db.table(CHANGES)} ("
            "position BIGINT PRIMARY KEY, originator_id TEXT NOT NULL, at TEXT NOT NULL, "
            "kind TEXT NOT NULL, subject TEXT NOT NULL, event TEXT NOT NULL, actor_id TEXT, "
            "actor_role TEXT, detail TEXT NOT NULL)"
        )
        cursor.execute(  # the projection's own loads use it: kept through a rebuild
            f"CREATE INDEX IF NOT EXISTS {CHANGES}_originator "
            f"ON {db.table(CHANGES)} (originator_id)"
        )
        for index in READER_INDEXES:
            index.create(cursor, db)

    def clear(self, cursor: Cursor, db: Database) -> None:
        for index in READER_INDEXES:
            index.drop(cursor, db)
        db.clear_table(cursor, db.table(CHANGES))

    def apply_batch(self, entries: Sequence[Entry], cursor: Cursor, db: Database) -> None:
        subjects = {e.key: s for e in entries if (s := subject_of(e.event)) is not None}
        unknown = {e.key for e in entries} - set(subjects)
        for row in select_in(cursor, db, SHAPE, "originator_id", unknown):
            subjects[row["originator_id"]] = row["subject"]
        rows = []
        for entry in entries:
            subject = subjects.get(entry.key)
            if subject is None:
                continue  # its first event could not be decoded (quarantined)
            event = entry.event
            actor = getattr(event, "actor", None) or {}
            detail = {k: v for k, v in vars(event).items() if k not in APART}
            rows.append(
                (
                    entry.position,
                    entry.key,
                    entry.at,
                    KINDS[entry.cls],
                    subject,
                    entry.cls.__name__,
                    actor.get("id"),
                    actor.get("role"),
                    json_text(detail),
                )
            )
        if rows:
            db.insert_many(cursor, db.table(CHANGES), SHAPE.columns, rows)


@dataclass(frozen=True)
class Change:
    position: int
    at: str
    kind: str
    subject: str
    event: str
    actor_id: str | None
    actor_role: str | None
    detail: dict[str, Any]

    def json(self) -> dict[str, Any]:
        return {
            "position": self.position,
            "at": self.at,
            "kind": self.kind,
            "subject": self.subject,
            "event": self.event,
            "actor": {"id": self.actor_id, "role": self.actor_role},
            "detail": self.detail,
        }


class ChangeLog:
    def __init__(self, db: Database) -> None:
        self.db = db

    def changes(
        self,
        *,
        kind: str | None = None,
        actor_id: str | None = None,
        after: int | None = None,
        limit: int = 100,
    ) -> list[Change]:
        """Oldest first, after the position `after`."""
        conditions: list[str] = ["position > %s"]
        params: list[Any] = [after or 0]
        for column, value in (("kind", kind), ("actor_id", actor_id)):
            if value is not None:
                conditions.append(f"{column} = %s")
                params.append(value)
        rows = self.db.statement(
            f"SELECT position, at, kind, subject, event, actor_id, actor_role, detail "
            f"FROM {self.db.table(CHANGES)} WHERE {' AND '.join(conditions)} "
            f"ORDER BY position LIMIT {int(limit)}",
            params,
            write=False,
        )
        return [
            Change(
                position=row[0],
                at=row[1],
                kind=row[2],
                subject=row[3],
                event=row[4],
                actor_id=row[5],
                actor_role=row[6],
                detail=json.loads(row[7]),
            )
            for row in rows
        ]
