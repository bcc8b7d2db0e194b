"""An attacker with rights on the database: raw SQL on the events table, triggers dropped.

`Tamper` edits a real SQLite file or a real PostgreSQL table the way someone
who bypasses Holdpoint would: the append-only triggers dropped first, then
rows updated, deleted, renumbered or inserted. Forged events are built as
such an attacker builds them: the event's JSON written by hand, its hash
recomputed with the published rules so that it is a valid link of its chain.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql

from domain.record.hashing import GENESIS_HASH, event_hash
from domain.record.thread_uuids import thread_uuid

Row = tuple[int, str, int, str, bytes]


class Tamper:
    """Raw access to one store's events table (SQLite file or PostgreSQL schema)."""

    def __init__(self, url: str, table: str) -> None:
        self.url = url
        self.table = table
        if url.startswith("sqlite"):
            self.kind = "sqlite"
            self.position = "rowid"
            self.connection: Any = sqlite3.connect(url.removeprefix("sqlite:///"))
            self.connection.isolation_level = None
            self.name = table
        else:
            self.kind = "postgres"
            self.position = "notification_id"
            base, _, query = url.partition("?")
            self.schema = query.removeprefix("schema=")
            self.connection = psycopg.connect(base, autocommit=True)
            self.name = sql.Identifier(self.schema, table).as_string(self.connection)

    def close(self) -> None:
        self.connection.close()

    def execute(self, statement: str, params: tuple[Any, ...] = ()) -> list[Any]:
        if self.kind == "sqlite":
            return self.connection.execute(statement.replace("%s", "?"), params).fetchall()
        cursor = self.connection.execute(statement, params)
        return cursor.fetchall() if cursor.description else []

    def drop_triggers(self) -> None:
        """What the attacker does first: the table stops refusing UPDATE and DELETE."""
        if self.kind == "sqlite":
            self.execute(f"DROP TRIGGER {self.table}_no_update")
            self.execute(f"DROP TRIGGER {self.table}_no_delete_unless_purged")
        else:
            for trigger in ("holdpoint_no_update_or_delete", "holdpoint_no_truncate"):
                self.execute(f"DROP TRIGGER {trigger} ON {self.name}")

    def _id(self, aggregate_id: str) -> str:
        return aggregate_id if self.kind == "sqlite" else str(UUID(aggregate_id))

    def rows(self) -> list[Row]:
        ident = (
            "originator_id" if self.kind == "sqlite" else "replace(originator_id::text, '-', '')"
        )
        found = self.execute(
            f"SELECT {self.position}, {ident}, originator_version, topic, state FROM {self.name} "
            f"ORDER BY {self.position}"
        )
        return [(p, a, v, t, bytes(s)) for p, a, v, t, s in found]

    def thread_rows(self, thread_id: str) -> list[Row]:
        aggregate_id = thread_uuid(thread_id).hex
        return [row for row in self.rows() if row[1] == aggregate_id]

    def position_of(self, thread_id: str, version: int) -> int:
        return next(row[0] for row in self.thread_rows(thread_id) if row[2] == version)

    def set_state(self, position: int, state: bytes) -> None:
        self.execute(
            f"UPDATE {self.name} SET state = %s WHERE {self.position} = %s", (state, position)
        )

    def delete(self, position: int) -> None:
        self.execute(f"DELETE FROM {self.name} WHERE {self.position} = %s", (position,))

    def swap_positions(self, first: int, second: int) -> None:
        """Renumber two events: each takes the other's place in the log."""
        moves = ((first, -1), (second, first), (-1, second))
        for old, new in moves:
            self.execute(
                f"UPDATE {self.name} SET {self.position} = %s WHERE {self.position} = %s",
                (new, old),
            )

    def swap_states(self, first: int, second: int) -> None:
        """Two rows keep their versions and positions and trade their contents."""
        states = {row[0]: row[4] for row in self.rows()}
        self.set_state(first, states[second])
        self.set_state(second, states[first])

    def insert(
        self, position: int | None, aggregate_id: str, version: int, topic: str, state: bytes
    ) -> int:
        columns = "originator_id, originator_version, topic, state"
        values: tuple[Any, ...] = (self._id(aggregate_id), version, topic, state)
        if position is not None:
            columns += f", {self.position}"
            values += (position,)
        marks = ", ".join(["%s"] * len(values))
        self.execute(f"INSERT INTO {self.name} ({columns}) VALUES ({marks})", values)
        return (
            int(self.execute(f"SELECT max({self.position}) FROM {self.name}")[0][0])
            if position is None
            else position
        )

    def forge(
        self, thread_id: str, name: str, fields: dict[str, Any], *, at: datetime | None = None
    ) -> tuple[int, bytes]:
        """A new last event of `thread_id`, chained and hashed by the rules: (version, state)."""
        rows = self.thread_rows(thread_id)
        last = max(rows, key=lambda row: row[2])
        previous = json.loads(last[4])
        version = last[2] + 1
        moment = at or datetime.now(UTC)
        digest = event_hash(name, thread_id, version, moment, previous["event_hash"], fields)
        state = {
            "timestamp": {"_type_": "datetime_iso", "_data_": moment.isoformat()},
            "prev_hash": previous["event_hash"],
            "event_hash": digest,
            **fields,
        }
        return version, json.dumps(state, separators=(",", ":"), ensure_ascii=False).encode()

    def rehash_from(self, thread_id: str, version: int, change: dict[str, Any]) -> None:
        """Alter `version`'s fields and recompute the hashes of it and every later event,
        so that the thread's chain is whole again (what the chain alone cannot catch)."""
        prev = None
        for position, _, number, topic, state in sorted(
            self.thread_rows(thread_id), key=lambda r: r[2]
        ):
            data = json.loads(state)
            if number < version:
                prev = data["event_hash"]
                continue
            if number == version:
                data.update(change)
            data["prev_hash"] = prev if prev is not None else GENESIS_HASH
            fields = {
                k: v
                for k, v in data.items()
                if k
                not in ("timestamp", "prev_hash", "event_hash", "originator_topic", "class_version")
            }
            moment = datetime.fromisoformat(data["timestamp"]["_data_"])
            data["event_hash"] = event_hash(
                topic.rpartition(".")[2], thread_id, number, moment, data["prev_hash"], fields
            )
            prev = data["event_hash"]
            self.set_state(
                position, json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()
            )
