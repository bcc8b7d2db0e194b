"""Rows a batch touches: read once, changed in memory, written back in bulk.

A read model applies a batch of events in three moves: load the rows the
batch's threads already have (one query per table), fold the events over
them in Python, and write back only what changed, as one `executemany` per
kind of change (delete, update, insert). The statement count per batch is
then a handful instead of several per event, which is what makes a rebuild
fast on PostgreSQL, where every statement is a round trip.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

import orjson

from domain.record.thread import WorkflowThread
from projections.database import Cursor, Database
from projections.log_reader import Entry
from projections.threads import STARTS

Row = dict[str, Any]
IN_LIST_CHUNK = 500  # SQLite allows 32,766 parameters; PostgreSQL takes an array


@dataclass(frozen=True)
class TableShape:
    """A read-model table: its name, its key column, and its columns in order."""

    name: str
    key: str
    columns: tuple[str, ...]


@dataclass(frozen=True)
class ReaderIndex:
    """A secondary index only readers use (the read model's own loads never do).

    Kept up to date row by row, it costs every insert of a rebuild a b-tree
    insert; built once over the finished table, it is one sort. So a rebuild
    drops it with the rows (`Projection.clear`) and creates it after its last
    batch; a rebuild cut short leaves it to the next runner's `create_tables`
    (IF NOT EXISTS), meanwhile the rows are right and only reads are slower.
    """

    name: str
    table: str
    definition: str  # "(columns) [WHERE ...]"

    def create(self, cursor: Cursor, db: Database) -> None:
        cursor.execute(
            f"CREATE INDEX IF NOT EXISTS {self.name} ON {db.table(self.table)} {self.definition}"
        )

    def drop(self, cursor: Cursor, db: Database) -> None:
        cursor.execute(f"DROP INDEX IF EXISTS {db.table(self.name)}")


@dataclass
class Rows:
    """The touched rows of one table: as loaded, and as the batch leaves them."""

    shape: TableShape
    group_by: str | None = None  # a column that never changes, to find rows by (a thread)
    loaded: dict[Any, Row] = field(default_factory=dict)
    current: dict[Any, Row] = field(default_factory=dict)
    _groups: dict[Any, dict[Any, None]] = field(default_factory=dict)

    def load(
        self, cursor: Cursor, db: Database, column: str, values: Iterable[Any], condition: str = ""
    ) -> list[Row]:
        """Load the rows whose `column` is one of `values` (and `condition`); return them."""
        found = []
        for row in select_in(cursor, db, self.shape, column, values, condition):
            key = row[self.shape.key]
            if key not in self.loaded:
                self.loaded[key] = row
                self.put(dict(row))
            found.append(self.current[key])
        return found

    def get(self, key: Any) -> Row | None:
        return self.current.get(key)

    def in_group(self, value: Any) -> list[Row]:
        """The current rows whose `group_by` column is `value`."""
        return [self.current[key] for key in self._groups.get(value, ())]

    def put(self, row: Row) -> None:
        key = row[self.shape.key]
        self.current[key] = row
        if self.group_by is not None:
            self._groups.setdefault(row[self.group_by], {})[key] = None

    def delete(self, key: Any) -> None:
        row = self.current.pop(key, None)
        if row is not None and self.group_by is not None:
            self._groups[row[self.group_by]].pop(key, None)

    def changes(self) -> Iterator[tuple[Row | None, Row | None]]:
        """Each touched row as (before, after); None where it did not or no longer exists."""
        for key in self.loaded.keys() | self.current.keys():
            before, after = self.loaded.get(key), self.current.get(key)
            if before != after:
                yield before, after

    def write(self, cursor: Cursor, db: Database) -> None:
        """Write what changed since loading: deletes, then updates, then inserts."""
        shape, table = self.shape, db.table(self.shape.name)
        gone = [(key,) for key in self.loaded if key not in self.current]
        if gone:
            cursor.executemany(f"DELETE FROM {table} WHERE {shape.key} = %s", gone)
        others = [column for column in shape.columns if column != shape.key]
        loaded, updated = self.loaded, itemgetter(*others, shape.key)
        changed = [
            updated(row)
            for key, row in self.current.items()
            if key in loaded and row != loaded[key]
        ]
        if changed:
            assignments = ", ".join(f"{column} = %s" for column in others)
            cursor.executemany(f"UPDATE {table} SET {assignments} WHERE {shape.key} = %s", changed)
        values = itemgetter(*shape.columns)  # a row's values in column order, in C
        new = [values(row) for key, row in self.current.items() if key not in loaded]
        if new:
            db.insert_many(cursor, table, shape.columns, new)


def select_in(
    cursor: Cursor,
    db: Database,
    shape: TableShape,
    column: str,
    values: Iterable[Any],
    condition: str = "",
) -> list[Row]:
    """Rows of `shape` whose `column` is one of `values`, as dicts."""
    wanted = list(dict.fromkeys(values))
    extra = f" AND {condition}" if condition else ""
    query = f"SELECT {', '.join(shape.columns)} FROM {db.table(shape.name)} WHERE "
    rows: list[Row] = []
    for start in range(0, len(wanted), IN_LIST_CHUNK):
        chunk = wanted[start : start + IN_LIST_CHUNK]
        if db.dialect == "postgres":
            cursor.execute(f"{query}{column} = ANY(%s){extra}", (chunk,))
        else:
            marks = ", ".join(["%s"] * len(chunk))
            cursor.execute(f"{query}{column} IN ({marks}){extra}", chunk)
        rows += [dict(zip(shape.columns, found, strict=True)) for found in cursor.fetchall()]
    return rows


def json_text(value: Any, *, sort_keys: bool = False) -> str:
    """A recorded JSON value as compact text (orjson; the json module for ints beyond 64 bits)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS if sort_keys else None).decode()
    except orjson.JSONEncodeError:
        return json.dumps(value, sort_keys=sort_keys, separators=(",", ":"), ensure_ascii=False)


# What a read model of interrupts follows: threads starting, interrupts, their approvals
# and their ends (the changes, whose fields it reads).
INTERRUPT_CHANGES = (
    WorkflowThread.InterruptRaised,
    WorkflowThread.InterruptApproved,
    WorkflowThread.InterruptResumed,
    WorkflowThread.InterruptExpired,
    WorkflowThread.InterruptAssigned,
    WorkflowThread.InterruptSuperseded,
    WorkflowThread.ThreadCancelled,
)
INTERRUPT_EVENTS = (*STARTS, *INTERRUPT_CHANGES)


def continued_threads(entries: Sequence[Entry]) -> set[str]:
    """The thread ids of a batch's threads that it continues rather than starts.

    Only those can have rows already, so only theirs need loading; a rebuild's
    batches mostly start the threads they hold, and load next to nothing.
    """
    started = {entry.key for entry in entries if issubclass(entry.cls, STARTS)}
    return {
        entry.thread.thread_id
        for entry in entries
        if entry.thread is not None and entry.key not in started
    }
