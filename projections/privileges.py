"""What a role that may not create tables needs of the store's database, and whether it has it.

A PostgreSQL store opened with `?create_tables=no` is the servers' role, not
the tables' owner: `holdpoint db init`, run as the owner, creates every table
(`service/schema.py` lists them), and the processes that run as the role
issue no DDL. Each checks instead, at start, that the tables it uses exist
and that the role holds the grants it needs on them (`require`): a missing
table or grant is one line naming it and the fix, not a `permission denied`
from deep inside a first write.

The checks look objects up in the catalogs (`pg_class`, `pg_proc`,
`pg_namespace`) and ask `has_table_privilege` and its kin by object id, which
works even for a role without USAGE on the schema. A SQLite file's owner is
its only role: there only the tables' existence is checked.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from eventsourcing.utils import strtobool

from domain.errors import HoldpointError
from domain.record.application import Workflows
from persistence.postgres import INSERT_FUNCTION, quoted
from projections.database import Cursor, Database

SELECT, INSERT, UPDATE, DELETE, TRUNCATE = "SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE"
USAGE, EXECUTE = "USAGE", "EXECUTE"
READ_WRITE = (SELECT, INSERT, UPDATE, DELETE)
# A read model's table: rows written in batches, emptied by a rebuild (TRUNCATE:
# `PostgresDatabase.clear_table`).
READ_MODEL = (*READ_WRITE, TRUNCATE)
SCHEMA, TABLE, FUNCTION = "schema", "table", "function"
INSERT_SIGNATURE = f"{INSERT_FUNCTION}(uuid[], bigint[], text[], bytea[])"
INIT = "run `holdpoint db init` as the role that owns the tables"


class TablesNotReadyError(HoldpointError):
    """A table the process needs is missing, or the role lacks a grant on it, in a store
    that may not create tables (`?create_tables=no`)."""


@dataclass(frozen=True)
class Need:
    """What the servers' role needs on one object: a table, the schema, a function."""

    name: str  # unqualified; a function's with its argument types; "" for the schema
    privileges: tuple[str, ...]
    kind: str = TABLE

    def label(self, schema: str) -> str:
        """The object's qualified name: `s`, `s.t`, `s.f(...)`."""
        if self.kind == SCHEMA:
            return quoted(schema)
        name = quoted(self.name) if self.kind == TABLE else self.name
        return f"{quoted(schema)}.{name}"

    def on(self, schema: str) -> str:
        """The object as a GRANT names it: `SCHEMA s`, `s.t`, `FUNCTION s.f(...)`."""
        if self.kind == TABLE:
            return self.label(schema)
        return f"{self.kind.upper()} {self.label(schema)}"


def tables(privileges: tuple[str, ...], *names: str) -> list[Need]:
    """The same privileges on each of `names`."""
    return [Need(name, privileges) for name in names]


def may_create_tables(store: Workflows) -> bool:
    """False for a store opened with `?create_tables=no` (only PostgreSQL has the option)."""
    return bool(strtobool(str(store.env.get("CREATE_TABLE") or "yes")))


def store_needs(store: Workflows) -> list[Need]:
    """The store's own: the schema, reading the events and snapshots, taking snapshots,
    and appending through the insert function (never into the events table itself)."""
    needs = [Need("", (USAGE,), SCHEMA), Need(_table_of(store.recorder), (SELECT,))]
    if store.snapshots is not None:
        needs.append(Need(_table_of(store.snapshots.recorder), (SELECT, INSERT)))
    needs.append(Need(INSERT_SIGNATURE, (EXECUTE,), FUNCTION))
    return needs


def _table_of(recorder: object) -> str:
    """A SQL recorder's table (the library types recorders without one)."""
    return str(getattr(recorder, "events_table_name", ""))


def schema_of(db: Database) -> str:
    """The schema `db` qualifies its tables with (`Database.table`); "main" on SQLite."""
    return db.table("").partition(".")[0].strip('"') or "main"


def require(db: Database, needs: Iterable[Need]) -> None:
    """Raise TablesNotReadyError, one line naming what is missing first and its fix, unless
    every object of `needs` exists and this role holds every privilege of `needs`."""
    with db.transaction(write=False) as cursor:
        problems, role = missing(cursor, db, list(needs))
    if not problems:
        return
    line = problems[0]
    if len(problems) > 1:
        line += f"; and {len(problems) - 1} more"
    if any(" lacks " in problem for problem in problems):
        line += f" (`holdpoint db init --role {role}` prints every grant the servers need)"
    raise TablesNotReadyError(line)


def missing(cursor: Cursor, db: Database, needs: Sequence[Need]) -> tuple[list[str], str]:
    """What is missing, one line each in the order of `needs` (none: every object exists
    and every privilege is held), and the role asking."""
    if db.dialect == "sqlite":
        cursor.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        found = {str(name) for (name,) in cursor.fetchall()}
        gone = [need for need in needs if need.kind == TABLE and need.name not in found]
        return [f"the table {need.name} does not exist: {INIT}" for need in gone], "owner"
    schema = schema_of(db)
    cursor.execute("SELECT current_user")
    role = str(cursor.fetchone()[0])
    problems: list[str] = []
    for need in needs:
        held = _held(cursor, schema, need)
        if held is None:
            problems.append(f"the {need.kind} {need.label(schema)} does not exist: {INIT}")
            continue
        lacking = ", ".join(privilege for privilege in need.privileges if privilege not in held)
        if lacking:
            problems.append(
                f"the role {role} lacks {lacking} on {need.label(schema)}: as the owner, "
                f"GRANT {lacking} ON {need.on(schema)} TO {quoted(role)}"
            )
    return problems, role


# Each kind of object: where to find it by schema and name, and how to ask for a privilege.
_LOOKUPS = {
    TABLE: (
        "pg_class o JOIN pg_namespace n ON n.oid = o.relnamespace "
        "WHERE n.nspname = %s AND o.relname = %s",
        "has_table_privilege",
    ),
    FUNCTION: (
        "pg_proc o JOIN pg_namespace n ON n.oid = o.pronamespace "
        "WHERE n.nspname = %s AND o.proname = %s",
        "has_function_privilege",
    ),
    SCHEMA: ("pg_namespace o WHERE o.nspname = %s AND %s = ''", "has_schema_privilege"),
}


def _held(cursor: Cursor, schema: str, need: Need) -> set[str] | None:
    """The privileges of `need` this role holds (one query); None if there is no such object."""
    where, check = _LOOKUPS[need.kind]
    asked = ", ".join([f"{check}(o.oid, %s)"] * len(need.privileges))
    cursor.execute(
        f"SELECT {asked} FROM {where}", (*need.privileges, schema, need.name.partition("(")[0])
    )
    row = cursor.fetchone()
    if row is None:
        return None
    return {privilege for privilege, held in zip(need.privileges, row, strict=True) if held}
