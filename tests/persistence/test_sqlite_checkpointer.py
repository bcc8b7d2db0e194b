"""SQLite WAL checkpoints run in a thread of their own, not inside commits.

Every connection Holdpoint writes a SQLite file through leaves checkpoints
(copying the WAL back into the database) to one thread per open file, which
runs from the first store or read-model database opened on the file until
the last is closed. The WAL still stays short, and a process that opens the
file without that thread (a `sqlite3` shell) reads and writes it as before.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from eventsourcing.persistence import StoredEvent

from domain.record.application import Workflows
from domain.record.store import open_store
from persistence.sqlite_checkpointer import BACKSTOP_PAGES, checkpointer_of
from projections.database import SQLiteDatabase

PAGE = 4096
EVENT_BYTES = 8 * 1024
EVENTS_PER_COMMIT = 25  # about 60 pages a commit
COMMITS = 40  # about 8 MB in all: 8 times what the WAL may hold
WAL_LIMIT = 256 * PAGE  # 1 MB: a few commits' worth


def record_blobs(store: Workflows, commits: int, tag: str) -> None:
    """`commits` commits of raw events of `EVENT_BYTES` each, on the store's recorder."""
    for _ in range(commits):
        store.recorder.insert_events(
            [
                StoredEvent(uuid.uuid4(), 1, f"tests:{tag}", bytes(EVENT_BYTES))
                for _ in range(EVENTS_PER_COMMIT)
            ]
        )


def wal_bytes(path: Path) -> int:
    wal = path.with_name(path.name + "-wal")
    return wal.stat().st_size if wal.exists() else 0


def pragma(store: Workflows, name: str) -> int:
    pool = store.recorder.datastore.pool
    connection = pool.get_connection(is_writer=False)
    try:
        cursor = connection.cursor()
        cursor.execute(f"PRAGMA {name}")
        return int(cursor.fetchone()[0])
    finally:
        pool.put_connection(connection)


def test_a_store_leaves_checkpoints_to_the_files_checkpointer_thread(tmp_path: Path):
    # Given a store on a SQLite file
    path = tmp_path / "h.db"
    with open_store(f"sqlite:///{path}") as store:
        record_blobs(store, 1, "first")
        # Then its commits checkpoint only past the backstop, and a thread does the rest
        assert pragma(store, "wal_autocheckpoint") == BACKSTOP_PAGES
        checkpointer = checkpointer_of(str(path))
        assert checkpointer is not None
        assert checkpointer.running


def test_the_wal_of_a_store_being_written_stays_short(tmp_path: Path):
    # Given a store on a SQLite file, and its checkpointer
    path = tmp_path / "h.db"
    with open_store(f"sqlite:///{path}") as store:
        record_blobs(store, 1, "first")
        checkpointer = checkpointer_of(str(path))
        assert checkpointer is not None
        largest = 0
        # When eight times more is written than the WAL may hold, a commit at a time, each
        # followed by the thread's next checkpoint
        for _ in range(COMMITS):
            record_blobs(store, 1, "blob")
            assert checkpointer.wait_for_checkpoint(checkpointer.checkpoints, timeout=10)
            largest = max(largest, wal_bytes(path))
        # Then the next commit started the WAL over each time, rather than growing it
        assert largest < WAL_LIMIT < COMMITS * EVENTS_PER_COMMIT * EVENT_BYTES / 5


def test_stores_on_one_file_share_one_checkpointer_which_stops_with_the_last(tmp_path: Path):
    # Given two stores open on one file
    path = tmp_path / "h.db"
    first, second = open_store(f"sqlite:///{path}"), open_store(f"sqlite:///{path}")
    record_blobs(first, 1, "a")
    record_blobs(second, 1, "b")
    checkpointer = checkpointer_of(str(path))
    assert checkpointer is not None

    # When the first is closed, the file keeps its one checkpointer
    first.close()
    assert checkpointer_of(str(path)) is checkpointer
    assert checkpointer.running

    # And when the second is closed, it stops, with the WAL emptied
    second.close()
    assert checkpointer_of(str(path)) is None
    assert not checkpointer.running
    assert wal_bytes(path) == 0


def test_the_read_models_database_leaves_checkpoints_to_the_checkpointer_too(tmp_path: Path):
    # Given the read models' database on a store's file, the store closed
    path = tmp_path / "h.db"
    with open_store(f"sqlite:///{path}") as store:
        record_blobs(store, 1, "first")
    db = SQLiteDatabase(str(path))
    try:
        # Then its commits do not checkpoint, and the file has a checkpointer meanwhile
        with db.transaction(write=False) as cursor:
            cursor.execute("PRAGMA wal_autocheckpoint")
            assert cursor.fetchone()[0] == BACKSTOP_PAGES
        assert checkpointer_of(str(path)) is not None
    finally:
        db.close()
    assert checkpointer_of(str(path)) is None


RAW_WRITER = """
import sqlite3, sys
connection = sqlite3.connect(sys.argv[1], isolation_level=None)
print(connection.execute("PRAGMA wal_autocheckpoint").fetchone()[0])
print(connection.execute("SELECT COUNT(*) FROM stored_events").fetchone()[0])
connection.execute("CREATE TABLE IF NOT EXISTS notes (body BLOB)")
for _ in range(200):
    connection.execute("INSERT INTO notes VALUES (?)", (bytes(40_000),))
print(connection.execute("SELECT COUNT(*) FROM notes").fetchone()[0])
"""


@pytest.mark.parametrize("store_open", [True, False], ids=["store-open", "store-closed"])
def test_a_process_without_the_checkpointer_reads_and_writes_the_file(
    tmp_path: Path, *, store_open: bool
):
    # Given a store's file, with the store still open in this process or not
    path = tmp_path / "h.db"
    store = open_store(f"sqlite:///{path}")
    record_blobs(store, 2, "before")
    if not store_open:
        store.close()

    # When another process writes it through a plain sqlite3 connection (about 2,000 pages)
    raw = subprocess.run(
        [sys.executable, "-c", RAW_WRITER, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    # Then it sees the store's events and writes, checkpointing at its own commits as
    # SQLite does by default (the setting is per connection, not kept in the file)
    assert raw.returncode == 0, raw.stderr
    assert raw.stdout.split() == ["1000", str(2 * EVENTS_PER_COMMIT), "200"]
    # And the store, open or opened again, goes on reading and writing
    if not store_open:
        store = open_store(f"sqlite:///{path}")
    try:
        record_blobs(store, 1, "after")
        assert store.recorder.max_notification_id() == 3 * EVENTS_PER_COMMIT
    finally:
        store.close()


COLLECTED_WHILE_HELD = """
import sys
from domain.record.store import open_store
from persistence import sqlite_checkpointer

forgotten = open_store(f"sqlite:///{sys.argv[1]}")  # a store its owner never closes


class CollectedMeanwhile(sqlite_checkpointer.WalCheckpointer):
    def __init__(self, *args, **kwargs):
        # the garbage collector runs the forgotten store's finalizer at this allocation,
        # while this thread holds the checkpointers' guard
        forgotten.close()
        super().__init__(*args, **kwargs)


sqlite_checkpointer.WalCheckpointer = CollectedMeanwhile
store = open_store(f"sqlite:///{sys.argv[2]}")
print("checked", sqlite_checkpointer.checkpointer_of(sys.argv[1]) is None)
print("checked", sqlite_checkpointer.checkpointer_of(sys.argv[2]) is not None)
store.close()
print("checked", sqlite_checkpointer.checkpointer_of(sys.argv[2]) is None)
"""


def test_a_store_closed_by_the_garbage_collector_while_a_checkpointer_starts_lets_go(
    tmp_path: Path,
):
    # Given a store nobody closes, closed by the collector (its finalizer) while this
    # thread starts another file's checkpointer, the checkpointers' guard in hand
    # When that happens, in a process of its own (a deadlock would stop it for ever)
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            COLLECTED_WHILE_HELD,
            str(tmp_path / "a.db"),
            str(tmp_path / "b.db"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=Path(__file__).resolve().parents[2],
    )
    # Then nothing waits for ever: the first file's checkpointer stopped once the guard
    # was let go, the second runs until its store closes
    # (its log lines, such as a checkpoint that met a writer, share stdout)
    assert run.returncode == 0, run.stderr
    checked = [line for line in run.stdout.splitlines() if line.startswith("checked ")]
    assert checked == ["checked True"] * 3, run.stdout
