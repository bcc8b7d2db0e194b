"""`Database.insert_many`: rows go in as given, however few or many (on PostgreSQL a
few by one INSERT, more by COPY); on every store."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from projections.database import FEW_ROWS, Database, database_for


@pytest.fixture
def db(store) -> Iterator[Database]:
    database = database_for(store)
    yield database
    database.close()


@pytest.mark.parametrize("count", [0, 1, FEW_ROWS, FEW_ROWS + 1, 100])
def test_rows_go_in_as_given_however_many(db, count):
    # Given a table of text, a number and a value that may be missing
    table = db.table(f"holdpoint_test_many_{count}")
    with db.transaction() as cursor:
        cursor.execute(f"CREATE TABLE {table} (k TEXT PRIMARY KEY, n BIGINT NOT NULL, v TEXT)")
    odd = ["a\tb", "line\nbreak", "back\\slash", 'quote\'s "x"', "\\N", "é ✓", ""]
    rows = [
        (f"{odd[n % len(odd)]}-{n}", n * 1_000_000_007, None if n % 3 else "v")
        for n in range(count)
    ]

    # When they are inserted
    with db.transaction() as cursor:
        db.insert_many(cursor, table, ("k", "n", "v"), rows)

    # Then each is stored as it was given
    assert sorted(db.statement(f"SELECT k, n, v FROM {table}", write=False)) == sorted(rows)
