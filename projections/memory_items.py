"""The memory store's read model: each item's current value, for search and for the
list of namespaces.

A namespace's path is its labels joined by `.` with a trailing `.` ("users.u-1."),
so that the items under a prefix are one range of the index on (path, key): from
"users." up to "users/" ('/' follows '.'). Labels hold no '.'
(`domain/memory/item.py`). A deleted item keeps its row, marked, so that writing it
again finds its namespace and key.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from domain.memory.filters import matches
from domain.memory.item import MemoryItem
from projections.database import Cursor, Database
from projections.log_reader import Entry
from projections.projection import Projection
from projections.rows import ReaderIndex, Rows, TableShape, json_text

ITEMS = "holdpoint_memory_items"
SCAN_BATCH = 500


def namespace_path(labels: Sequence[str]) -> str:
    return "".join(f"{label}." for label in labels)


def prefix_range(labels: Sequence[str]) -> tuple[str, str]:
    """The range of paths at or under a namespace prefix (all, for no labels)."""
    path = namespace_path(labels)
    return path, (path[:-1] + "/") if path else "\U0010ffff"


class MemoryItemsProjection(Projection):
    name = "memory_items"
    tables = (ITEMS,)
    event_classes = (MemoryItem.ItemStored, MemoryItem.ItemChanged, MemoryItem.ItemDeleted)

    def create_tables(self, cursor: Cursor, db: Database) -> None:
        cursor.execute(
            f"CREATE TABLE IF NOT EXISTS {db.table(ITEMS)} ("
            "originator_id TEXT PRIMARY KEY, namespace TEXT NOT NULL, path TEXT NOT NULL, "
            "item_key TEXT NOT NULL, value TEXT NOT NULL, created_at TEXT NOT NULL, "
            "updated_at TEXT NOT NULL, deleted INTEGER NOT NULL, position BIGINT NOT NULL)"
        )
        for index in READER_INDEXES:
            index.create(cursor, db)

    def clear(self, cursor: Cursor, db: Database) -> None:
        for index in READER_INDEXES:
            index.drop(cursor, db)
        db.clear_table(cursor, db.table(ITEMS))

    def apply_batch(self, entries: Sequence[Entry], cursor: Cursor, db: Database) -> None:
        rows = Rows(SHAPE)
        stored = {e.key for e in entries if issubclass(e.cls, MemoryItem.ItemStored)}
        rows.load(cursor, db, "originator_id", {e.key for e in entries} - stored)
        for entry in entries:
            event, at = entry.event, entry.at
            if issubclass(entry.cls, MemoryItem.ItemStored):
                rows.put(
                    {
                        "originator_id": entry.key,
                        "namespace": json_text(event.namespace),
                        "path": namespace_path(event.namespace),
                        "item_key": event.key,
                        "value": json_text(event.value),
                        "created_at": at,
                        "updated_at": at,
                        "deleted": 0,
                        "position": entry.position,
                    }
                )
                continue
            row = rows.get(entry.key)
            if row is None:
                continue  # its first event could not be decoded (quarantined)
            if issubclass(entry.cls, MemoryItem.ItemChanged):
                if row["deleted"]:
                    row["created_at"] = at  # written again: a new item to its readers
                row["value"], row["deleted"] = json_text(event.value), 0
            else:
                row["deleted"] = 1
            row["updated_at"], row["position"] = at, entry.position
        rows.write(cursor, db)


READER_INDEXES = (ReaderIndex(f"{ITEMS}_path", ITEMS, "(path, item_key)"),)
COLUMNS = (
    "originator_id",
    "namespace",
    "path",
    "item_key",
    "value",
    "created_at",
    "updated_at",
    "deleted",
    "position",
)
SHAPE = TableShape(ITEMS, "originator_id", COLUMNS)


@dataclass(frozen=True)
class StoredItem:
    namespace: list[str]
    key: str
    value: dict[str, Any]
    created_at: str
    updated_at: str


class MemoryIndex:
    """Search the memory store's items, and list its namespaces."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def search(
        self, prefix: Sequence[str], conditions: dict[str, Any], limit: int, offset: int
    ) -> list[StoredItem]:
        """Items under `prefix` whose value meets `conditions`, by namespace and key."""
        found: list[StoredItem] = []
        for item in self._under(prefix):
            if matches(item.value, conditions):
                found.append(item)
                if len(found) >= offset + limit:
                    break
        return found[offset:]

    def namespaces(
        self,
        prefix: Sequence[str],
        suffix: Sequence[str],
        max_depth: int | None,
        limit: int,
        offset: int,
    ) -> list[list[str]]:
        """The namespaces with items under `prefix` that end in `suffix`, each cut to
        `max_depth` labels, once each, in order."""
        low, high = prefix_range(prefix)
        rows = self.db.statement(
            f"SELECT DISTINCT path, namespace FROM {self.db.table(ITEMS)} "
            "WHERE deleted = 0 AND path >= %s AND path < %s ORDER BY path",
            (low, high),
            write=False,
        )
        found: dict[tuple[str, ...], None] = {}
        for _, text in rows:
            labels = json.loads(text)
            if suffix and labels[-len(suffix) :] != list(suffix):
                continue
            found[tuple(labels[:max_depth] if max_depth else labels)] = None
        return [list(labels) for labels in list(found)[offset : offset + limit]]

    def _under(self, prefix: Sequence[str]) -> Iterator[StoredItem]:
        """The live items under `prefix`, by path and key, read a batch at a time."""
        low, high = prefix_range(prefix)
        after_path, after_key = low, ""
        table = self.db.table(ITEMS)
        while True:
            rows = self.db.statement(
                f"SELECT namespace, path, item_key, value, created_at, updated_at FROM {table} "
                "WHERE deleted = 0 AND path < %s AND (path > %s OR (path = %s AND item_key > %s)) "
                f"ORDER BY path, item_key LIMIT {SCAN_BATCH}",
                (high, after_path, after_path, after_key),
                write=False,
            )
            for namespace, _, key, value, created_at, updated_at in rows:
                yield StoredItem(
                    json.loads(namespace), key, json.loads(value), created_at, updated_at
                )
            if len(rows) < SCAN_BATCH:
                return
            after_path, after_key = rows[-1][1], rows[-1][2]
