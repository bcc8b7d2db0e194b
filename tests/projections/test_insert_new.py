"""`Database.insert_new`: rows meant to be new go in, in bulk where the database can, and
one whose key is there already is left out, the rest still going in; on every store."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from projections.database import BULK_ROWS, ROWS_PER_STATEMENT, Database, database_for


@pytest.fixture
def db(store) -> Iterator[Database]:
    database = database_for(store)
    yield database
    database.close()


def test_new_rows_go_in_and_one_already_there_is_left_as_it_was(db):
    # Given a table holding one row
    table = db.table("holdpoint_test_new_rows")
    with db.transaction() as cursor:
        cursor.execute(f"CREATE TABLE {table} (k TEXT PRIMARY KEY, v TEXT NOT NULL)")
        cursor.execute(f"INSERT INTO {table} (k, v) VALUES (%s, %s)", ("k0050", "before"))
    # When more rows than a bulk's are inserted as new, that row's key among them
    rows = [(f"k{n:04d}", "after") for n in range(BULK_ROWS * 3)]
    with db.transaction() as cursor:
        db.insert_new(cursor, table, ("k", "v"), rows, ("k",))
        cursor.execute(f"INSERT INTO {table} (k, v) VALUES (%s, %s)", ("later", "same"))
    # Then every row is there once, the one that was there as it was, and the
    # transaction went on
    found = dict(db.statement(f"SELECT k, v FROM {table}", write=False))
    assert len(found) == BULK_ROWS * 3 + 1
    assert found["k0050"] == "before"
    assert found["k0051"] == found["k0000"] == "after"
    assert found["later"] == "same"


def test_new_rows_in_bulk_all_go_in(db):
    table = db.table("holdpoint_test_bulk_rows")
    with db.transaction() as cursor:
        cursor.execute(
            f"CREATE TABLE {table} (k TEXT NOT NULL, o TEXT NOT NULL, PRIMARY KEY (k, o))"
        )
        db.insert_new(cursor, table, ("k", "o"), [(f"w{n}", "t") for n in range(500)], ("k", "o"))
    assert db.statement(f"SELECT count(*) FROM {table}", write=False) == [(500,)]


def test_rows_in_bulk_keep_what_a_copy_could_misread(db):
    # Given keys as a caller could name a thread: tabs, newlines, backslashes, quotes
    odd = ["a\tb", "line\nbreak", "back\\slash", 'quote\'s "x"', "\\N", "é ✓"]
    rows = [(f"{text}-{n}", "t") for n in range(BULK_ROWS) for text in odd]
    table = db.table("holdpoint_test_odd_rows")
    with db.transaction() as cursor:
        cursor.execute(
            f"CREATE TABLE {table} (k TEXT NOT NULL, o TEXT NOT NULL, PRIMARY KEY (k, o))"
        )
        db.insert_new(cursor, table, ("k", "o"), rows, ("k", "o"))
    # Then each is stored as it was given
    assert sorted(db.statement(f"SELECT k, o FROM {table}", write=False)) == sorted(rows)


@pytest.mark.parametrize("count", [1, 3, 5, ROWS_PER_STATEMENT, ROWS_PER_STATEMENT + 3])
def test_rows_of_any_count_go_in_once_the_first_of_a_key_kept(db, count):
    # Given a table holding the row of one key
    table = db.table(f"holdpoint_test_counted_{count}")
    with db.transaction() as cursor:
        cursor.execute(f"CREATE TABLE {table} (k TEXT PRIMARY KEY, v TEXT NOT NULL)")
        cursor.execute(f"INSERT INTO {table} (k, v) VALUES (%s, %s)", ("k0", "before"))
    # When `count` rows are inserted as new, that key among them, and one key twice
    rows = [(f"k{n}", "first") for n in range(count)] + [(f"k{count - 1}", "second")]
    with db.transaction() as cursor:
        db.insert_new(cursor, table, ("k", "v"), rows, ("k",))
    # Then each key is there once: the one already there as it was, else the first given
    found = dict(db.statement(f"SELECT k, v FROM {table}", write=False))
    expected = {f"k{n}": "first" for n in range(count)} | {"k0": "before"}
    assert found == expected


def test_rows_out_of_key_order_keep_the_first_given_of_a_key(db):
    # Given rows given out of key order, one key twice with its later row sorting first
    table = db.table("holdpoint_test_unordered")
    with db.transaction() as cursor:
        cursor.execute(f"CREATE TABLE {table} (k TEXT PRIMARY KEY, v TEXT NOT NULL)")
    rows = [("k9", "nine"), ("k1", "z-first"), ("k5", "five"), ("k1", "a-second")]
    # When they are inserted as new
    with db.transaction() as cursor:
        db.insert_new(cursor, table, ("k", "v"), rows, ("k",))
    # Then the key's first given row is the one kept (SQLite sorts by key, stably)
    found = dict(db.statement(f"SELECT k, v FROM {table}", write=False))
    assert found == {"k9": "nine", "k1": "z-first", "k5": "five"}
