"""Every table the store's database holds beside the events and snapshots, in one list.

Each part is a module's tables: the function that creates them (if missing:
idempotent) and the grants the servers' role needs on each. `holdpoint db
init`, run as the tables' owner, creates the store's own tables and then each
part's, in this order, and prints the GRANT statements for the servers' role
(`grant_statements`). A process whose store may not create tables
(`?create_tables=no`) issues no DDL: it checks at start that every table
exists and that its role holds every grant (`prepare`), or stops with one
line naming what is missing and the fix.

A module with tables of its own adds one line to `PARTS`, with a
`create_tables(cursor, db)` (`db` the store's `projections.database.Database`)
and its grants; `tests/service/test_schema.py` checks that `db init`
makes no table this list does not name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from domain.record.application import Workflows
from domain.record.store import backend_of
from persistence.postgres import quoted
from projections import model_tables
from projections.catalog import all_projections
from projections.database import Cursor, Database
from projections.privileges import (
    INSERT,
    READ_WRITE,
    SELECT,
    Need,
    may_create_tables,
    require,
    schema_of,
    store_needs,
    tables,
)
from projections.projection import Projection
from service import reservations, run_store, sessions, subject_keys
from service.notifications import deliveries

DEFAULT_ROLE = "holdpoint_app"


@dataclass(frozen=True)
class Part:
    """One module's tables beside the events: what creates them, what the role needs."""

    name: str
    create: Callable[[Cursor, Database], None]
    needs: Sequence[Need]


def _read_models(cursor: Cursor, db: Database) -> None:
    model_tables.create_tables(cursor, db, _projections())


def _projections() -> dict[str, Projection]:
    return {projection.name: projection for projection in all_projections()}


PARTS: tuple[Part, ...] = (
    # positions, versions, each read model's tables, the quarantine (projections/)
    Part("read models", _read_models, model_tables.needs(_projections())),
    Part("runs", run_store.create_tables, tables(READ_WRITE, run_store.RUNS, run_store.LEASES)),
    Part("reservations", reservations.create_tables, tables(READ_WRITE, reservations.RESERVATIONS)),
    Part("UI sessions", sessions.create_tables, tables(READ_WRITE, sessions.SESSIONS)),
    Part(
        "deliveries",
        deliveries.create_tables,
        tables(READ_WRITE, deliveries.DELIVERIES, deliveries.NOTIFIER),
    ),
    # Data subjects' keys (domain/privacy): the servers read and add keys; only the
    # owner deletes one (`holdpoint erase`).
    Part(
        "subject keys",
        subject_keys.create_tables,
        tables((SELECT, INSERT), subject_keys.SUBJECT_KEYS),
    ),
    # A new table beside the events: one line here, Part(name, create_tables, grants).
)


def needs(store: Workflows, parts: Sequence[Part] = PARTS) -> list[Need]:
    """Every grant the servers' role needs: the store's own, then each part's."""
    return [*store_needs(store), *(need for part in parts for need in part.needs)]


def create_all(store: Workflows, db: Database, parts: Sequence[Part] = PARTS) -> list[str]:
    """Create every part's tables that are missing, a part per transaction, as the owner;
    return the names of the tables the servers' role needs grants on."""
    for part in parts:
        with db.transaction() as cursor:
            part.create(cursor, db)
    return [need.name for need in needs(store, parts) if need.kind == "table"]


def prepare(store: Workflows, db: Database) -> bool:
    """Whether this process may create the tables beside the events (each part then
    creates its own as it starts, as before). If it may not, every table of `PARTS` and
    every grant the servers need is checked first: TablesNotReadyError, one line, if one
    is missing."""
    if may_create_tables(store):
        return True
    require(db, needs(store))
    return False


def grant_statements(store: Workflows, db: Database, role: str) -> list[str]:
    """The GRANT statements that give `role` what the servers need, one per object (none
    but on PostgreSQL: a SQLite file's owner is its only role)."""
    if backend_of(store) != "postgres":
        return []
    schema = schema_of(db)
    return [
        f"GRANT {', '.join(need.privileges)} ON {need.on(schema)} TO {quoted(role)};"
        for need in needs(store)
    ]
