"""The read models' PostgreSQL connections, shared by a process's threads: given threads
that use the database one after another or nested, then how many connections it holds."""

from __future__ import annotations

import threading
import time
import uuid
from urllib.parse import parse_qsl, urlsplit

import psycopg
import pytest

from domain.record.store import open_store, postgres_params
from projections.database import PostgresDatabase

pytestmark = pytest.mark.postgres


def closed(url: str, name: str) -> bool:
    """Whether the server has ended every connection named `name`: a backend leaves
    pg_stat_activity a moment after its client closed it."""
    deadline = time.monotonic() + 10
    while connections_named(url, name):
        if time.monotonic() > deadline:
            return False
    return True


def connections_named(url: str, name: str) -> int:
    with psycopg.connect(url.split("?", maxsplit=1)[0]) as other:
        [(count,)] = other.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (name,)
        ).fetchall()
    return int(count)


@pytest.fixture
def named(postgres_url: str) -> tuple[PostgresDatabase, str, str]:
    name = f"holdpoint-test-{uuid.uuid4().hex[:8]}"
    with open_store(postgres_url) as store:
        params = {**postgres_params(store), "application_name": name}
    schema = dict(parse_qsl(urlsplit(postgres_url).query))["schema"]
    return PostgresDatabase(params, schema), name, postgres_url


def test_threads_that_take_turns_share_one_connection_of_each_kind(named):
    db, name, url = named

    def use() -> None:
        with db.transaction() as cursor:
            cursor.execute("SELECT 1")
        db.statement("SELECT 1")

    for _ in range(8):
        worker = threading.Thread(target=use)
        worker.start()
        worker.join()

    assert connections_named(url, name) == 2
    db.close()
    assert closed(url, name)


def test_a_transaction_inside_another_on_one_thread_is_a_savepoint_of_it(named):
    db, name, url = named
    table = db.table("nested")
    with db.transaction() as cursor:
        cursor.execute(f"CREATE TABLE {table} (n INTEGER)")

    with db.transaction() as outer:
        outer.execute(f"INSERT INTO {table} VALUES (1)")
        with db.transaction() as inner:  # sees the outer's row: the same connection
            inner.execute(f"SELECT count(*) FROM {table}")
            assert inner.fetchone()[0] == 1

    assert db.statement(f"SELECT count(*) FROM {table}") == [(1,)]
    assert connections_named(url, name) == 2
    db.close()
