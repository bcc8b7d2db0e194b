"""The catalogue of the tables beside the events (service/schema.py) names every table there is.

What `holdpoint db init` creates is the catalogue, and nothing else: so a
module that adds a table without adding it to `PARTS` (and the grants the
servers' role needs on it) fails here, before a role without it fails in
production. The processes' checks as a real second role:
tests/api/cli/test_least_privilege.py.
"""

from __future__ import annotations

import sqlite3

import psycopg
import pytest

from domain.record.store import open_store
from persistence.postgres import PURGED
from projections.database import SQLiteDatabase, database_for
from projections.privileges import TABLE
from service.schema import PARTS, create_all, grant_statements, needs, prepare
from tests.cli_process import holdpoint

# The purge permits: the owner's purge function writes them, the servers' role gets no grant.
OWNERS_ONLY = {PURGED}


def sqlite_tables(path: str) -> set[str]:
    with sqlite3.connect(path) as connection:
        rows = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        return {name for (name,) in rows}


def catalogued(store_url: str) -> list[str]:
    with open_store(store_url) as store:
        return [need.name for need in needs(store) if need.kind == TABLE]


@pytest.mark.parametrize("part", PARTS, ids=[part.name for part in PARTS])
def test_each_part_names_every_table_its_create_makes(tmp_path, part):
    # Given an empty database
    db = SQLiteDatabase(str(tmp_path / "empty.db"))

    # When the part creates its tables
    with db.transaction() as cursor:
        part.create(cursor, db)
    db.close()

    # Then they are the tables it asks grants on, and each is asked some
    assert sqlite_tables(str(tmp_path / "empty.db")) == {need.name for need in part.needs}
    assert all(need.privileges for need in part.needs)


def test_db_init_on_sqlite_makes_the_catalogue_and_no_other_table(tmp_path):
    url = f"sqlite:///{tmp_path / 'h.db'}"
    for _ in range(2):  # idempotent: a second run changes nothing
        done = holdpoint(url, "db", "init")
        assert done.returncode == 0, done.stderr
        assert sqlite_tables(str(tmp_path / "h.db")) - OWNERS_ONLY == set(catalogued(url))
    assert f"-- tables: {', '.join(catalogued(url))}" in done.stdout
    assert "GRANT" not in done.stdout  # a SQLite file's owner is its only role


@pytest.mark.postgres
def test_db_init_on_postgresql_makes_the_catalogue_and_no_other_table(postgres_url):
    for _ in range(2):
        done = holdpoint(postgres_url, "db", "init")
        assert done.returncode == 0, done.stderr
    schema = postgres_url.rpartition("schema=")[2]
    with psycopg.connect(postgres_url.partition("?")[0]) as connection:
        rows = connection.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,)
        ).fetchall()
    assert {name for (name,) in rows} - OWNERS_ONLY == set(catalogued(postgres_url))
    assert (
        len([line for line in done.stdout.splitlines() if line.startswith("GRANT ")])
        == len(catalogued(postgres_url)) + 2
    )  # and the schema's USAGE, the insert function's EXECUTE


def test_a_store_that_may_create_tables_is_not_checked(tmp_path):
    url = f"sqlite:///{tmp_path / 'h.db'}"
    with open_store(url) as store:
        db = database_for(store)
        assert prepare(store, db) is True
        assert grant_statements(store, db, "anyone") == []
        assert len(create_all(store, db)) == len(catalogued(url))
        db.close()
