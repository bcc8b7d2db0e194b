"""`holdpoint erase --subject ID`: crypto-shredding, the places cleared, and the proof.

The subject's values are in the events only as envelopes under their key
(`domain/privacy`), so destroying the key erases them there, and the hashes, seals
and bundles, all taken over the envelopes, still verify. Plaintext that was read out
of the events is then cleared wherever it was kept:

- read models: rebuilt from the log, in which the values now read `[erased]`;
- snapshots of the subject's threads: deleted (none is taken of a thread with
  personal data; one taken before its graph declared any would hold plaintext);
- any other table of the store's database (runs' requests and outputs, deliveries'
  bodies, reservations: caches): each occurrence of the subject's plaintext replaced
  by `[erased]`;
- SQLite: deleted rows are zeroed (`secure_delete`), the file is rewritten (VACUUM)
  and its WAL checkpointed and truncated, so no page of the file or its WAL keeps an
  old copy; PostgreSQL: the tables cleared are vacuumed.

The erasure report lists each place (every table of the database, and for SQLite the
file and its WAL as bytes) with the rows (or byte runs) holding the subject's
plaintext before and after: after must be nothing. The plaintext searched for is what
the subject's envelopes held (read while the key was still kept) and the subject's id.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import structlog

from domain.privacy.envelopes import ERASED
from domain.privacy.erasure import (
    Erased,
    SubjectFound,
    erase_subject,
    find_subject,
    stored_states,
)
from domain.record.application import Workflows
from domain.record.store import backend_of
from domain.record.thread_uuids import thread_uuid
from projections import model_tables
from projections.catalog import all_projections
from projections.database import Database, database_for
from projections.quarantine import QUARANTINE
from projections.runner import ProjectionRunner
from service.subject_keys import SUBJECT_KEYS

log = structlog.get_logger(__name__)

EVENTS, SNAPSHOTS, KEYS, READ_MODEL, OTHER, FILE = (
    "events",
    "snapshots",
    "subject keys",
    "read model",
    "table",
    "file",
)
Say = Callable[[str], None]
WAL_DEADLINE = 30.0  # seconds to keep trying to truncate a busy WAL


@dataclass(frozen=True)
class Place:
    """One place the subject's plaintext could be, and what was found there."""

    name: str
    kind: str
    before: int  # rows (a file: byte runs) holding it before the erasure
    after: int  # and after: nothing, for the erasure to be done
    action: str


@dataclass(frozen=True)
class ErasureReport:
    """What one erasure did, and what each place held afterwards."""

    subject_ref: str
    key_id: str | None
    key_destroyed: bool
    threads: list[str]
    values: int
    position: int | None
    searched: int  # how many texts each place was searched for
    places: list[Place] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return all(place.after == 0 for place in self.places)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "clean": self.clean}


def erase(
    store: Workflows,
    subject_id: str,
    actor: dict[str, Any],
    reason: str | None,
    say: Say | None = None,
) -> ErasureReport:
    """Erase the subject (`domain.privacy.erasure`), clear what held their plaintext and
    report each place. ErasureRefusedError, changing nothing, under a legal hold."""
    tell = say or (lambda _: None)
    found = find_subject(store, subject_id)
    needles = found.needles()
    db = None if backend_of(store) == "memory" else database_for(store)
    try:
        kinds = _kinds(store)
        before = _scan(store, db, needles, kinds)
        erased = erase_subject(store, found, actor, reason)
        tell(f"Destroyed the key of subject {found.ref[:16]}; recorded SubjectErased.")
        actions = _clear(store, db, found, needles, kinds, tell)
        after = _scan(store, db, needles, kinds)
    finally:
        if db is not None:
            db.close()
    places = [
        Place(name, kind, before.get(name, (kind, 0))[1], count, actions.get(name, "searched"))
        for name, (kind, count) in after.items()
    ]
    report = _report(erased, needles, places)
    log.info("subject_erased", ref=found.ref, threads=len(found.threads), clean=report.clean)
    return report


def _report(erased: Erased, needles: Sequence[str], places: list[Place]) -> ErasureReport:
    found = erased.found
    return ErasureReport(
        found.ref,
        found.kid,
        erased.key_destroyed,
        list(found.threads),
        found.values,
        erased.position,
        len(needles),
        places,
    )


def _kinds(store: Workflows) -> dict[str, str]:
    """The kind of each table the store's own parts name (the rest: OTHER)."""
    kinds = {getattr(store.recorder, "events_table_name", "events"): EVENTS, SUBJECT_KEYS: KEYS}
    if store.snapshots is not None:
        name = getattr(store.snapshots.recorder, "events_table_name", "snapshots")
        kinds[name] = SNAPSHOTS
    for table in (model_tables.POSITIONS, model_tables.VERSIONS, QUARANTINE):
        kinds[table] = READ_MODEL
    for projection in all_projections():
        for table in projection.tables:
            kinds[table] = READ_MODEL
    return kinds


# -- clearing ---------------------------------------------------------------------------


def _clear(
    store: Workflows,
    db: Database | None,
    found: SubjectFound,
    needles: Sequence[str],
    kinds: dict[str, str],
    tell: Say,
) -> dict[str, str]:
    """Clear each place that held plaintext; what was done, by place."""
    actions: dict[str, str] = dict.fromkeys(kinds, "none needed")
    for name, kind in kinds.items():
        actions[name] = {
            EVENTS: "holds envelopes only: the key destroyed erased them",
            KEYS: "the subject's key deleted",
            READ_MODEL: "rebuilt from the log",
        }.get(kind, actions[name])
    if db is None:
        return actions
    snapshots = _delete_snapshots(store, db, found.threads)
    for name, kind in kinds.items():
        if kind == SNAPSHOTS:
            actions[name] = f"{snapshots} snapshot(s) of the subject's threads deleted"
    runner = ProjectionRunner(store, all_projections(), database=db)
    runner.rebuild()
    tell("Rebuilt the read models.")
    for table, columns in _tables(db).items():
        if kinds.get(table, OTHER) == OTHER:
            scrubbed = _scrub(db, table, columns, needles)
            actions[table] = f"{scrubbed} value(s) replaced by {ERASED!r}"
    cleared = [name for name, kind in kinds.items() if kind != EVENTS]
    cleared += [table for table in _tables(db) if kinds.get(table, OTHER) == OTHER]
    actions.update(_compact(store, db, cleared, tell))
    return actions


def _delete_snapshots(store: Workflows, db: Database, threads: Sequence[str]) -> int:
    if store.snapshots is None or not threads:
        return 0
    table = db.table(store.snapshots.recorder.events_table_name)  # type: ignore[attr-defined]
    ids = [thread_uuid(t) for t in threads]
    keys: list[Any] = [i.hex for i in ids] if db.dialect == "sqlite" else ids
    marks = ", ".join(["%s"] * len(keys))
    with db.transaction() as cursor:
        cursor.execute(f"DELETE FROM {table} WHERE originator_id IN ({marks})", keys)
        return max(cursor.rowcount, 0)


def _scrub(db: Database, table: str, columns: dict[str, str], needles: Sequence[str]) -> int:
    """Replace each needle in the table's text columns by ERASED; the values changed."""
    changed = 0
    texts = [c for c, kind in columns.items() if kind == "text"]
    find = "instr({}, %s) > 0" if db.dialect == "sqlite" else "strpos({}, %s) > 0"
    with db.transaction() as cursor:
        for column in texts:
            for needle in needles:
                cursor.execute(
                    f"UPDATE {db.table(table)} SET {column} = replace({column}, %s, %s) "
                    f"WHERE {find.format(column)}",
                    (needle, ERASED, needle),
                )
                changed += max(cursor.rowcount, 0)
    return changed


def _compact(store: Workflows, db: Database, cleared: list[str], tell: Say) -> dict[str, str]:
    """Leave no old copy of a cleared row in the database's files (see the docstring);
    on PostgreSQL, of the tables `cleared` (never the events: they hold envelopes only)."""
    if db.dialect == "postgres":
        present = _tables(db)
        for table in sorted(set(cleared) & present.keys()):
            db.statement(f"VACUUM {db.table(table)}")
        tell("Vacuumed the tables cleared.")
        return {}
    path = str(store.env.get("SQLITE_DBNAME"))
    connection = sqlite3.connect(path, isolation_level=None, timeout=30)
    try:
        connection.execute("PRAGMA secure_delete = ON")
        connection.execute("VACUUM")
        busy = _truncate_wal(connection)
    finally:
        connection.close()
    tell("Rewrote the SQLite file (VACUUM) and truncated its WAL.")
    note = "rewritten (VACUUM)"
    wal = "checkpointed and truncated" if not busy else "checkpoint busy: a reader held it"
    return {path: note, f"{path}-wal": wal}


def _truncate_wal(connection: sqlite3.Connection) -> bool:
    """Checkpoint and truncate the WAL; True if it stayed busy until the deadline.

    SQLite answers busy at once, without waiting, while another connection (a
    server's auto-checkpoint after a commit) runs a checkpoint; that passes in
    milliseconds, so the checkpoint is tried again until WAL_DEADLINE."""
    deadline = time.monotonic() + WAL_DEADLINE
    while True:
        busy, _, _ = connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if not busy or time.monotonic() >= deadline:
            return bool(busy)
        time.sleep(0.01)


# -- searching -------------------------------------------------------------------------


def _tables(db: Database) -> dict[str, dict[str, str]]:
    """Every table of the database and its columns, each "text", "bytes" or "other"."""
    found: dict[str, dict[str, str]] = {}
    if db.dialect == "sqlite":
        names = db.statement(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
            write=False,
        )
        for (name,) in names:
            columns = db.statement(f"PRAGMA table_info({name})", write=False)
            found[name] = {str(c[1]): _sqlite_kind(str(c[2])) for c in columns}
        return found
    schema = db.table("x").rpartition(".")[0].strip('"')
    rows = db.statement(
        "SELECT c.table_name, c.column_name, c.data_type FROM information_schema.columns c "
        "JOIN information_schema.tables t ON t.table_schema = c.table_schema "
        "AND t.table_name = c.table_name WHERE c.table_schema = %s "
        "AND t.table_type = 'BASE TABLE' ORDER BY c.table_name, c.ordinal_position",
        (schema,),
        write=False,
    )
    for table, column, data_type in rows:
        kind = (
            "bytes"
            if data_type == "bytea"
            else "text"
            if "char" in data_type or data_type == "text"
            else "other"
        )
        found.setdefault(str(table), {})[str(column)] = kind
    return found


def _sqlite_kind(declared: str) -> str:
    upper = declared.upper()
    if "BLOB" in upper:
        return "bytes"
    if "TEXT" in upper or "CHAR" in upper or "CLOB" in upper or not upper:
        return "text"
    return "other"


def _scan(
    store: Workflows, db: Database | None, needles: Sequence[str], kinds: dict[str, str]
) -> dict[str, tuple[str, int]]:
    """Each place and how many of its rows (a file: byte runs) hold one of `needles`."""
    if db is None:
        return _scan_memory(store, needles)
    places: dict[str, tuple[str, int]] = {}
    for table, columns in _tables(db).items():
        places[table] = (kinds.get(table, OTHER), _rows_holding(db, table, columns, needles))
    if db.dialect == "sqlite":
        path = str(store.env.get("SQLITE_DBNAME"))
        for name in (path, f"{path}-wal"):
            places[name] = (FILE, _bytes_holding(name, needles))
    return places


def _rows_holding(db: Database, table: str, columns: dict[str, str], needles: Sequence[str]) -> int:
    if not needles:
        return 0
    conditions: list[str] = []
    params: list[Any] = []
    for column, kind in columns.items():
        for needle in needles:
            if db.dialect == "sqlite":
                conditions.append(f"instr(CAST({column} AS BLOB), %s) > 0")
                params.append(needle.encode())
            elif kind == "bytes":
                conditions.append(f"position(%s::bytea IN {column}) > 0")
                params.append(needle.encode())
            else:
                conditions.append(f"strpos({column}::text, %s) > 0")
                params.append(needle)
    query = f"SELECT count(*) FROM {db.table(table)} WHERE {' OR '.join(conditions)}"
    return int(db.statement(query, params, write=False)[0][0])


def _bytes_holding(path: str, needles: Sequence[str]) -> int:
    if not os.path.exists(path):
        return 0
    with open(path, "rb") as file:
        data = file.read()
    return sum(data.count(needle.encode()) for needle in needles)


def _scan_memory(store: Workflows, needles: Sequence[str]) -> dict[str, tuple[str, int]]:
    """A memory store's one place: its events, as stored."""
    held = sum(
        1
        for _, state in stored_states(store)
        if any(needle.encode() in state for needle in needles)
    )
    return {"events (in memory)": (EVENTS, held), "subject keys (in memory)": (KEYS, 0)}
