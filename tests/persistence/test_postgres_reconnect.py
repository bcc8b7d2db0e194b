"""After a PostgreSQL outage the store works again at once.

psycopg_pool retries a lost connection with a backoff that doubles without
bound, and tries a dead idle connection after another with 1 s, then 2 s,
between them; the store caps the one and sweeps the idle connections at the
first dead one (persistence/postgres.py, QuickReconnectPool).
"""

from __future__ import annotations

import time

from domain.store import open_store
from persistence.postgres import RECONNECT_DELAY_CAP, CappedBackoff, QuickReconnectPool
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
