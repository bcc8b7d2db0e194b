"""Where each read model stands: its position in the log, and the shape of its tables.

`holdpoint_projection_positions` holds each model's position (see
`projections/runner.py`); `holdpoint_projection_versions` the version of the
shape its tables were created in (`Projection.version`). A runner whose code
gives a model another version than the one recorded (a model recorded before
versions were is at version 1) drops that model's tables at setup, creates
them in the new shape and sets its position back to 0, in one transaction:
rows of the old shape are never read as the new one, and the next catch-up
applies the whole log to the model again. The other models keep their rows.

A store that may not create tables (`?create_tables=no`: a role that does not
own them) gets `check_set_up` instead: the tables, the grants and each model's
recorded version are checked, and nothing is created, dropped or inserted.
`holdpoint db init`, run as the owner, sets them up (and reshapes a model).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import structlog

from projections.database import Cursor, Database
from projections.privileges import (
    DELETE,
    INIT,
    INSERT,
    READ_MODEL,
    SELECT,
    UPDATE,
    Need,
    TablesNotReadyError,
)
from projections.quarantine import QUARANTINE
from projections.quarantine import create_tables as create_quarantine

if TYPE_CHECKING:
    from projections.projection import Projection

POSITIONS = "holdpoint_projection_positions"
VERSIONS = "holdpoint_projection_versions"
log = structlog.get_logger()


def needs(projections: Mapping[str, Projection]) -> list[Need]:
    """The grants a runner of `projections` needs on the tables of `create_tables`: the
    positions (moved, and locked FOR UPDATE by each batch), the versions (read), the
    models' own tables and the quarantine (its rows replaced batch by batch)."""
    return [
        Need(POSITIONS, (SELECT, UPDATE)),
        Need(VERSIONS, (SELECT,)),
        *[Need(table, READ_MODEL) for p in projections.values() for table in p.tables],
        Need(QUARANTINE, (SELECT, INSERT, DELETE)),
    ]


def set_up(cursor: Cursor, db: Database, projections: Mapping[str, Projection]) -> None:
    """Create the positions and versions tables and the models' tables and indexes that
    are missing; drop and create anew, at position 0, a model of another version.

    On PostgreSQL, another runner's batch locks the positions first and then
    writes its models' tables; setup takes the positions first too (after a
    lock that keeps two setups apart), so that creating an index or dropping a
    table, which locks the table until the commit, never deadlocks with a
    batch. Only setups read or write the versions, one at a time.
    """
    positions, versions = db.table(POSITIONS), db.table(VERSIONS)
    if db.dialect == "postgres":
        cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (positions,))
    cursor.execute(
        f"CREATE TABLE IF NOT EXISTS {positions} (name TEXT PRIMARY KEY, position BIGINT NOT NULL)"
    )
    cursor.execute(
        f"CREATE TABLE IF NOT EXISTS {versions} (name TEXT PRIMARY KEY, version INTEGER NOT NULL)"
    )
    if db.dialect == "postgres":
        cursor.execute(f"LOCK TABLE {positions} IN EXCLUSIVE MODE")
    recorded = recorded_versions(cursor, db)
    for name, projection in projections.items():
        if recorded.get(name, projection.version) != projection.version:
            _reshape(cursor, db, projection, recorded[name])
        projection.create_tables(cursor, db)
        cursor.execute(
            f"INSERT INTO {positions} (name, position) VALUES (%s, 0) "
            "ON CONFLICT (name) DO NOTHING",
            (name,),
        )
        cursor.execute(
            f"INSERT INTO {versions} (name, version) VALUES (%s, %s) "
            "ON CONFLICT (name) DO UPDATE SET version = excluded.version",
            (name, projection.version),
        )


def check_set_up(cursor: Cursor, db: Database, projections: Mapping[str, Projection]) -> None:
    """What `set_up` would do, for a store that may not create tables: raise
    TablesNotReadyError for a model that has no position yet, or tables of another version
    (both are for `holdpoint db init` to set up, as the owner). The tables themselves and
    the grants are checked before (`projections.privileges.require`)."""
    recorded = recorded_versions(cursor, db)
    for name, projection in projections.items():
        if name not in recorded:
            msg = f"the read model {name!r} is not set up in this store: {INIT}"
            raise TablesNotReadyError(msg)
        if recorded[name] != projection.version:
            msg = (
                f"the read model {name!r} has tables of version {recorded[name]}, this code's "
                f"are of version {projection.version}: {INIT}, which rebuilds it"
            )
            raise TablesNotReadyError(msg)


def recorded_versions(cursor: Cursor, db: Database) -> dict[str, int]:
    """The version each model's tables were created in: as recorded, or 1 for a model
    with a position and no version (recorded before versions were)."""
    cursor.execute(
        f"SELECT p.name, v.version FROM {db.table(POSITIONS)} p "
        f"LEFT JOIN {db.table(VERSIONS)} v ON v.name = p.name"
    )
    rows = cursor.fetchall()
    return {str(name): 1 if version is None else int(version) for name, version in rows}


def _reshape(cursor: Cursor, db: Database, projection: Projection, recorded: int) -> None:
    """Drop a model whose tables are of another version and set it back to position 0:
    the next catch-up rebuilds its rows from the log, in the new shape."""
    log.warning(
        "read model changed shape: rebuilding it from the log",
        projection=projection.name,
        recorded_version=recorded,
        version=projection.version,
    )
    projection.drop_tables(cursor, db)
    cursor.execute(
        f"UPDATE {db.table(POSITIONS)} SET position = 0 WHERE name = %s", (projection.name,)
    )


def create_tables(cursor: Cursor, db: Database, projections: Mapping[str, Projection]) -> None:
    """Every table a runner of `projections` keeps, as `ProjectionRunner.setup` creates
    them: positions, versions, the models' (`set_up`), the quarantine
    (`projections/quarantine.py`). For `holdpoint db init`, in its transaction."""
    set_up(cursor, db, projections)
    create_quarantine(cursor, db)


class IndexesKept:
    """A cursor for a rebuild's `Projection.clear` where the role may not drop indexes (a
    store opened with create_tables=no): the reader indexes' DROP INDEX is left out, so the
    rows are emptied and the indexes kept, updated row by row as the rebuild inserts."""

    def __init__(self, cursor: Cursor) -> None:
        self._cursor = cursor

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        if sql.lstrip().upper().startswith("DROP INDEX"):
            return None
        return self._cursor.execute(sql, params)

    def executemany(self, sql: str, params: Sequence[Sequence[Any]]) -> Any:
        return self._cursor.executemany(sql, params)

    def fetchone(self) -> Any:
        return self._cursor.fetchone()

    def fetchall(self) -> list[Any]:
        return self._cursor.fetchall()
