"""The assistants' read model: each assistant with recorded configuration, as its events
leave it, for search and count.

A row keeps every version (JSON), so that choosing the latest needs no other read.
Assistants are configuration, made by hand and counted in tens: search reads the rows
of a graph (or all) and filters by name and metadata in Python, as `langgraph dev` does.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from domain.assistants.assistant import FIELDS, Assistant
from projections.database import Cursor, Database
from projections.log_reader import Entry
from projections.projection import Projection
from projections.rows import Rows, TableShape, json_text

ASSISTANTS = "holdpoint_assistants"
COLUMNS = (
    "originator_id",
    "assistant_id",
    "graph_id",
    "version",
    "versions",
    "created_at",
    "updated_at",
    "deleted",
    "position",
)
SHAPE = TableShape(ASSISTANTS, "originator_id", COLUMNS)


class AssistantIndexProjection(Projection):
    name = "assistant_index"
    tables = (ASSISTANTS,)
    event_classes = (
        Assistant.AssistantCreated,
        Assistant.AssistantUpdated,
        Assistant.LatestVersionSelected,
        Assistant.AssistantDeleted,
    )

    def create_tables(self, cursor: Cursor, db: Database) -> None:
        cursor.execute(
            f"CREATE TABLE IF NOT EXISTS {db.table(ASSISTANTS)} ("
            "originator_id TEXT PRIMARY KEY, assistant_id TEXT NOT NULL UNIQUE, "
            "graph_id TEXT NOT NULL, version INTEGER NOT NULL, versions TEXT NOT NULL, "
            "created_at TEXT NOT NULL, updated_at TEXT NOT NULL, deleted INTEGER NOT NULL, "
            "position BIGINT NOT NULL)"
        )

    def clear(self, cursor: Cursor, db: Database) -> None:
        db.clear_table(cursor, db.table(ASSISTANTS))

    def apply_batch(self, entries: Sequence[Entry], cursor: Cursor, db: Database) -> None:
        rows = Rows(SHAPE)
        made = {e.key for e in entries if issubclass(e.cls, Assistant.AssistantCreated)}
        rows.load(cursor, db, "originator_id", {e.key for e in entries} - made)
        versions: dict[str, dict[str, Any]] = {}  # each touched row's, decoded once
        for entry in entries:
            event, at = entry.event, entry.at
            if issubclass(entry.cls, Assistant.AssistantCreated):
                rows.put(
                    {
                        "originator_id": entry.key,
                        "assistant_id": event.assistant_id,
                        "created_at": at,
                        "deleted": 0,
                        "version": 1,
                    }
                )
                versions[entry.key] = {}
            row = rows.get(entry.key)
            if row is None:
                continue  # its making could not be decoded (quarantined)
            if entry.key not in versions:
                versions[entry.key] = json.loads(row["versions"])
            if issubclass(entry.cls, Assistant.AssistantCreated | Assistant.AssistantUpdated):
                number = getattr(event, "version", 1)
                fields = {name: getattr(event, name) for name in FIELDS}
                versions[entry.key][str(number)] = {**fields, "created_at": at}
                row["version"] = number
            elif issubclass(entry.cls, Assistant.LatestVersionSelected):
                row["version"] = event.version
            elif issubclass(entry.cls, Assistant.AssistantDeleted):
                row["deleted"] = 1
            row["graph_id"] = versions[entry.key][str(row["version"])]["graph_id"]
            row["versions"] = json_text(versions[entry.key])
            row["updated_at"], row["position"] = at, entry.position
        rows.write(cursor, db)


@dataclass(frozen=True)
class AssistantRow:
    """An assistant at its latest version, with every field of that version."""

    assistant_id: str
    version: int
    fields: dict[str, Any]  # graph_id, config, context, metadata, name, description
    created_at: str
    updated_at: str


class AssistantIndex:
    def __init__(self, db: Database) -> None:
        self.db = db

    def assistants(self, graph_id: str | None = None) -> list[AssistantRow]:
        """Every assistant not deleted (of `graph_id`), at its latest version."""
        where, params = "WHERE deleted = 0", []
        if graph_id is not None:
            where, params = f"{where} AND graph_id = %s", [graph_id]
        rows = self.db.statement(
            f"SELECT assistant_id, version, versions, created_at, updated_at "
            f"FROM {self.db.table(ASSISTANTS)} {where}",
            params,
            write=False,
        )
        found = []
        for assistant_id, version, versions, created_at, updated_at in rows:
            fields = dict(json.loads(versions)[str(version)])
            fields.pop("created_at")
            found.append(AssistantRow(assistant_id, version, fields, created_at, updated_at))
        return found
