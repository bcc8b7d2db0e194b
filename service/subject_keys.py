"""The SQL stores' subjects' keys: `holdpoint_subject_keys`, beside the events.

One row per data subject (`ref`: the subject's reference, never its id), its key id
and 32-byte key. The servers' role may read and add keys (SELECT, INSERT); only the
tables' owner deletes one (`holdpoint erase`), and nothing updates one. The key is
read from the table at each read of an event that holds envelopes: no process keeps
a key that another process has erased. A SQLite connection here deletes with
`secure_delete` on, so an erased key's bytes are zeroed in the file.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from domain.privacy.envelopes import Keys, SubjectKey, new_key
from domain.record.application import Workflows
from projections.database import Cursor, Database, database_for
from projections.privileges import may_create_tables

SUBJECT_KEYS = "holdpoint_subject_keys"


def create_tables(cursor: Cursor, db: Database) -> None:
    """The keys table, if missing."""
    blob = "BYTEA" if db.dialect == "postgres" else "BLOB"
    cursor.execute(
        f"CREATE TABLE IF NOT EXISTS {db.table(SUBJECT_KEYS)} (ref TEXT PRIMARY KEY, "
        f"kid TEXT NOT NULL, key {blob} NOT NULL, created_at TEXT NOT NULL)"
    )


class SQLSubjectKeys:
    """A SQL store's subjects' keys (see the module's docstring)."""

    def __init__(self, db: Database, *, create: bool = True) -> None:
        self.db = db
        self._table = db.table(SUBJECT_KEYS)
        if db.dialect == "sqlite":
            db.statement("PRAGMA secure_delete = ON")
        if create:
            with db.transaction() as cursor:
                create_tables(cursor, db)

    def key_for(self, ref: str) -> SubjectKey:
        kept = self.keys([ref]).get(ref)  # most writes find it: a read, not a write
        if kept is not None:
            return kept
        kid, key = new_key()
        now = datetime.now(UTC).isoformat()
        self.db.statement(
            f"INSERT INTO {self._table} (ref, kid, key, created_at) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (ref) DO NOTHING",
            (ref, kid, key, now),
        )
        found = self.keys([ref]).get(ref)
        if found is None:  # erased between the two statements: the next write makes a new one
            return self.key_for(ref)
        return found

    def keys(self, refs: Iterable[str]) -> Keys:
        wanted = sorted(set(refs))
        if not wanted:
            return {}
        marks = ", ".join(["%s"] * len(wanted))
        rows = self.db.statement(
            f"SELECT ref, kid, key FROM {self._table} WHERE ref IN ({marks})", wanted, write=False
        )
        return {str(ref): (str(kid), bytes(key)) for ref, kid, key in rows}

    def destroy(self, ref: str) -> bool:
        with self.db.transaction() as cursor:
            cursor.execute(f"DELETE FROM {self._table} WHERE ref = %s", (ref,))
            return cursor.rowcount > 0

    def close(self) -> None:
        self.db.close()


def subject_keys_for(store: Workflows) -> SQLSubjectKeys:
    """The keys of `store`'s database (the table made if missing and the store may)."""
    return SQLSubjectKeys(database_for(store), create=may_create_tables(store))
