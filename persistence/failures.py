"""What a store that cannot answer raises, for those that wait and try again.

The library wraps the drivers' errors in its own; the read models use the
drivers directly. Locked, full, read-only, unreachable: none of these is a
bug in the request, and none leaves a transaction half written.
"""

from __future__ import annotations

import sqlite3

import psycopg
from eventsourcing import persistence

STORE_UNAVAILABLE: tuple[type[Exception], ...] = (
    persistence.OperationalError,
    persistence.InterfaceError,
    persistence.InternalError,
    persistence.WaitInterruptedError,
    psycopg.OperationalError,
    psycopg.InterfaceError,
    psycopg.errors.ReadOnlySqlTransaction,  # a standby, or default_transaction_read_only
    sqlite3.OperationalError,
)
