"""SQLite WAL checkpoints in a thread of their own, off the commit path.

A checkpoint copies the pages of the write-ahead log (WAL) back into the
database file, so that writers can start the WAL over from its beginning.
SQLite runs one by itself inside the commit that takes the WAL past
`wal_autocheckpoint` pages (1,000 by default): that commit then copies the
WAL and syncs the database file while it holds the file's write gate
(`persistence.sqlite.write_gate`), and every other writer of the process
waits for it. A refund cycle writes about 45 pages, so under load one commit
in twenty did it, for 5 to 40 ms: the tail of a resume's latency.

So every connection Holdpoint writes the file through moves that limit out
of the way (`BACKSTOP_PAGES`), and one thread per open file checkpoints
instead, every `INTERVAL` seconds while anything was written: PASSIVE, so it
neither waits for nor blocks readers and writers (it skips the frames a
reader still uses, and copies them next time), and it holds no Python lock
while SQLite works. A writer that finds the whole WAL copied and no reader in
it starts it over. Under writes that never pause, frames keep arriving while
a checkpoint copies, so that seldom happens: the WAL then grows until writes
pause (measured: 2 to 8 MB in the HTTP benchmark, against a steady 4 MB with
SQLite's own checkpoints; up to 30 MB with checkpoints 0.1 s apart), and at
most to the limit, which is a backstop, not
0: a commit past it checkpoints as SQLite does by default, with little left
to copy. Should this thread stall, the backstop bounds the WAL too.
Processes that open the file without this thread (a `sqlite3` shell, an
older Holdpoint) keep SQLite's default and checkpoint at their own commits;
the setting is per connection, never stored in the file.

The thread starts with the first holder of a file (`hold_checkpointer`) and
stops when the last lets go: it then tries once to copy everything and empty
the WAL (TRUNCATE, without waiting for anyone).
"""

from __future__ import annotations

import atexit
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import structlog

log = structlog.get_logger()

INTERVAL = 0.02  # seconds between checkpoints (at 0.1 the benchmark's WAL reached 30 MB)
BUSY = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)  # another checkpointer, a lock: next time
BACKSTOP_PAGES = 10_000  # a commit checkpoints past this (40 MB of 4 KiB pages): 10 x SQLite's


def take_commit_checkpoints_off(connection: sqlite3.Connection) -> None:
    """Let `connection`'s commits leave checkpoints to the file's checkpointer thread,
    unless the WAL passes `BACKSTOP_PAGES`."""
    connection.execute(f"PRAGMA wal_autocheckpoint = {BACKSTOP_PAGES}")


class WalCheckpointer:
    """Checkpoints one SQLite file's WAL every `interval` seconds until stopped.

    `checkpoints` counts the checkpoints that found every frame of the WAL
    copied back into the database when they ended. A checkpoint that finds
    the file busy (another process's checkpointer at work: `holdpoint verify`
    runs several) is left to the next, without a warning.
    """

    def __init__(self, path: str, interval: float = INTERVAL) -> None:
        self.path = path
        self.interval = interval
        self.checkpoints = 0
        self._data_version: int | None = None
        self._warned = False
        self._done = threading.Condition()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name="holdpoint-wal-checkpointer", daemon=True
        )

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread, after its last checkpoint (see the module's docstring)."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)

    def wait_for_checkpoint(self, after: int, timeout: float) -> bool:
        """Wait until `checkpoints` exceeds `after`; False on timeout."""
        with self._done:
            return self._done.wait_for(lambda: self.checkpoints > after, timeout)

    def _run(self) -> None:
        connection: sqlite3.Connection | None = None
        behind = True  # frames may wait to be copied: those of before this thread started
        try:
            while not self._stop.wait(self.interval):
                connection = connection or self._connect()
                if connection is not None and (self._written(connection) or behind):
                    behind = not self._checkpoint(connection, "PASSIVE")
            connection = connection or self._connect()
            if connection is not None:
                self._checkpoint(connection, "TRUNCATE")
        finally:
            if connection is not None:
                connection.close()

    def _connect(self) -> sqlite3.Connection | None:
        """A connection of the thread's own, never one that creates the file."""
        uri = Path(self.path).resolve().as_uri() + "?mode=rw"
        try:
            connection = sqlite3.connect(
                uri, uri=True, isolation_level=None, check_same_thread=False, timeout=0
            )
        except sqlite3.Error as error:
            if not self._warned:  # once, not every interval
                log.warning(
                    "wal checkpointer cannot open the file", path=self.path, error=str(error)
                )
                self._warned = True
            return None
        return connection

    def _written(self, connection: sqlite3.Connection) -> bool:
        """Whether another connection committed since the last look (True if unsure)."""
        try:
            version = connection.execute("PRAGMA data_version").fetchone()[0]
        except sqlite3.Error:
            return True
        written, self._data_version = version != self._data_version, version
        return bool(written)

    def _checkpoint(self, connection: sqlite3.Connection, mode: str) -> bool:
        """One checkpoint; whether it left the whole WAL copied back. A failure is logged
        and left to the next one."""
        try:
            busy, frames, copied = connection.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()
        except sqlite3.Error as error:
            busy_file = getattr(error, "sqlite_errorcode", None) in BUSY
            say = log.debug if busy_file else log.warning
            say("wal checkpoint failed", path=self.path, mode=mode, error=str(error))
            return False
        complete = not busy and copied == frames
        if complete:
            with self._done:
                self.checkpoints += 1
                self._done.notify_all()
        return bool(complete)


_RUNNING: dict[str, tuple[WalCheckpointer, int]] = {}  # realpath -> (thread, holders)
_RUNNING_GUARD = threading.Lock()
_GUARD_HELD = threading.local()  # `.value`: this thread holds _RUNNING_GUARD
_DEFERRED: list[_Hold] = []  # releases asked for by a thread that held the guard


@contextmanager
def _guarded() -> Iterator[None]:
    """_RUNNING_GUARD, held by this thread; once let go, the releases asked for meanwhile.

    The garbage collector may close a store that was never closed (its finalizer) at
    any allocation, so also while this thread holds the guard: that store's release
    is then deferred (`_Hold.release`), since taking the guard again on the same
    thread would wait for ever.
    """
    _GUARD_HELD.value = True  # set before the lock is taken, cleared after it is let go:
    try:  # a finalizer run in between defers too, rather than wait on this thread
        with _RUNNING_GUARD:
            yield
    finally:
        _GUARD_HELD.value = False
    while True:
        try:
            deferred = _DEFERRED.pop()
        except IndexError:
            return
        deferred.release()


def hold_checkpointer(db_name: str) -> Callable[[], None]:
    """Keep a checkpointer thread running on `db_name` (one per file in this process)
    until the returned function is called; the thread stops when its last holder lets go."""
    key = os.path.realpath(db_name)
    with _guarded():
        checkpointer, holders = _RUNNING.get(key) or (WalCheckpointer(db_name), 0)
        if holders == 0:
            checkpointer.start()
        _RUNNING[key] = (checkpointer, holders + 1)
    return _Hold(key, checkpointer).release


class _Hold:
    """One holder's claim on a file's checkpointer; released once, however often asked."""

    def __init__(self, key: str, checkpointer: WalCheckpointer) -> None:
        self.key = key
        self.checkpointer: WalCheckpointer | None = checkpointer

    def release(self) -> None:
        if getattr(_GUARD_HELD, "value", False):  # a finalizer, run while this thread holds it
            _DEFERRED.append(self)
            return
        with _guarded():
            checkpointer, self.checkpointer = self.checkpointer, None
            current, holders = _RUNNING.get(self.key) or (None, 0)
            if checkpointer is None or current is not checkpointer:  # released, or at exit
                return
            if holders > 1:
                _RUNNING[self.key] = (current, holders - 1)
                return
            del _RUNNING[self.key]
        checkpointer.stop()


@atexit.register
def _stop_all() -> None:
    """At exit, stop the threads of stores left open, so that their connections close and
    the last connection to close on a file can remove its WAL, as SQLite does."""
    with _guarded():
        running = [checkpointer for checkpointer, _ in _RUNNING.values()]
        _RUNNING.clear()
    for checkpointer in running:
        checkpointer.stop()


def checkpointer_of(db_name: str) -> WalCheckpointer | None:
    """The checkpointer running on `db_name` in this process, if any."""
    with _guarded():
        found = _RUNNING.get(os.path.realpath(db_name))
    return found[0] if found else None
