"""After a PostgreSQL outage the store works again at once.

psycopg_pool retries a lost connection with a backoff that doubles without
bound, and tries a dead idle connection after another with 1 s, then 2 s,
between them; the store caps the one and sweeps the idle connections at the
first dead one (persistence/postgres.py, QuickReconnectPool). A connection
is pinged before it is handed out only when the server has written to it.
"""

from __future__ import annotations

import time
from typing import Any

import psycopg

from domain.access.identity import key_uuid
from domain.access.keyring import Keyring
from domain.record.store import open_store, postgres_params
from persistence.key_probe import PostgresKeyProbe
from persistence.postgres import (
    RECONNECT_DELAY_CAP,
    CappedBackoff,
    QuickReconnectPool,
    may_be_dead,
)
from tests.api.private_postgres import private_postgres


def test_reconnection_attempts_are_never_more_than_the_cap_apart():
    # Given an attempt that keeps failing for a minute
    attempt = CappedBackoff(timeout=300)
    delays = []
    for second in range(60):
        attempt.update_delay(float(second))
        delays.append(attempt.delay)
    # Then it tries again at most a second later every time (psycopg_pool alone: 1, 2, 4 ... 32 s)
    assert max(delays) <= RECONNECT_DELAY_CAP
    assert min(delays) > 0.5


def test_the_first_request_after_a_database_restart_is_answered(tmp_path):
    with private_postgres() as database:
        store = open_store(database.url)
        try:
            # Given a store whose pool holds several idle connections
            pool = store.recorder.datastore.pool
            assert isinstance(pool, QuickReconnectPool)
            held = [pool.getconn() for _ in range(4)]
            for connection in held:
                pool.putconn(connection)
            # When the database restarts while they sit idle
            database.stop()
            database.start()
            # Then the first read afterwards is answered, within the pool's 2 s wait
            started = time.monotonic()
            assert store.recorder.max_notification_id() in (None, 0)
            assert time.monotonic() - started < 2
        finally:
            store.close()


def test_the_key_probe_answers_the_first_check_after_a_database_restart():
    with private_postgres() as database, open_store(database.url) as store:
        # Given a key, and a key probe that has checked it on its own connection
        keys = Keyring(store)
        info, _ = keys.create("probed", "reviewer")
        recorder = store.recorder
        table = (recorder.datastore.schema, recorder.events_table_name)
        probe = PostgresKeyProbe(postgres_params(store), *table)
        try:
            assert probe.changed_since(key_uuid(info.key_id), 1) is False
            # When the database restarts, and the key is revoked meanwhile
            database.stop()
            database.start()
            keys.revoke(info.key_id, reason="restart test")
            # Then the next check is answered, on a new connection, and sees the revocation
            assert probe.changed_since(key_uuid(info.key_id), 1) is True
        finally:
            probe.close()


class CountedPings:
    """Wraps a pool's connection check (its pre-ping), counting the pings."""

    def __init__(self, pool: QuickReconnectPool) -> None:
        self.count = 0
        self.check = pool._check
        pool._check = self

    def __call__(self, connection: Any) -> None:
        self.count += 1
        assert self.check is not None
        self.check(connection)


def backend_pids(pool: QuickReconnectPool, count: int) -> set[int]:
    """The server processes of `count` connections of the pool, handed back afterwards."""
    held = [pool.getconn() for _ in range(count)]
    try:
        return {int(connection.info.backend_pid) for connection in held}
    finally:
        for connection in held:
            pool.putconn(connection)


def test_a_connection_handed_out_again_costs_no_ping(postgres_url):
    with open_store(postgres_url) as store:
        # Given a store that has read once, its connections alive
        pool = store.recorder.datastore.pool
        store.recorder.max_notification_id()
        pings = CountedPings(pool)
        # When it reads again
        for _ in range(3):
            store.recorder.max_notification_id()
        # Then no connection was pinged: the server had written nothing to them
        assert pings.count == 0


def test_connections_the_server_ended_are_pinged_and_replaced(postgres_url):
    with open_store(postgres_url) as store, psycopg.connect(postgres_url.split("?")[0]) as admin:
        # Given a store's idle connections, all ended by the server
        pool = store.recorder.datastore.pool
        pool.wait()
        ended = backend_pids(pool, pool.get_stats()["pool_available"])
        for pid in ended:
            admin.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))
        pings = CountedPings(pool)
        # When the store reads
        assert store.recorder.max_notification_id() in (None, 0)
        # Then a dead connection was pinged, and the pool holds new ones
        assert pings.count >= 1
        assert not backend_pids(pool, 1) & ended


def test_only_a_connection_the_server_wrote_to_may_be_dead(postgres_url):
    with open_store(postgres_url) as store, psycopg.connect(postgres_url.split("?")[0]) as admin:
        pool = store.recorder.datastore.pool
        connection = pool.getconn()
        try:
            # Given a connection that has answered a query
            connection.execute("SELECT 1").fetchall()
            # Then it is not taken for dead
            assert not may_be_dead(connection)
            # When the server ends it
            pid = connection.info.backend_pid
            admin.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))
            # Then its socket says so
            assert may_be_dead(connection)
        finally:
            pool.putconn(connection)


def test_the_connection_used_last_is_handed_out_first(postgres_url):
    with open_store(postgres_url) as store:
        # Given a pool of idle connections, one of them returned last
        pool = store.recorder.datastore.pool
        pool.wait()
        held = [pool.getconn() for _ in range(pool.get_stats()["pool_available"])]
        last = held[-1].info.backend_pid
        for connection in held:
            pool.putconn(connection)
        # When reads follow one another
        used = set()
        for _ in range(len(held) + 1):
            with pool.connection() as connection:
                used.add(connection.info.backend_pid)
        # Then they all use that connection, whose server process is warm
        assert used == {last}
