"""The embedded SQLite store: append-only at the database, tunable durability."""

import sqlite3
import threading
from pathlib import Path
from typing import TypedDict
from uuid import UUID, uuid4

import pytest
from eventsourcing.persistence import (
    ConnectionUnavailableError,
    IntegrityError,
    OperationalError,
    StoredEvent,
)

from domain.graph import END, START, StateGraph
from domain.record.store import StoreURLError, open_store
from persistence.sqlite import INSERT_ROWS


class State(TypedDict):
    x: int


def record_one_thread(url: str) -> None:
    builder = StateGraph(State)
    builder.add_node("n", lambda state: {"x": state["x"] + 1})
    builder.add_edge(START, "n")
    builder.add_edge("n", END)
    with open_store(url) as store:
        builder.compile(checkpointer=store).invoke({"x": 1}, {"configurable": {"thread_id": "t"}})


def synchronous_level(url: str) -> int:
    with open_store(url) as store:
        pool = store.recorder.datastore.pool
        connection = pool.get_connection(is_writer=False)
        try:
            cursor = connection.cursor()
            cursor.execute("PRAGMA synchronous")
            return int(cursor.fetchone()[0])
        finally:
            pool.put_connection(connection)


@pytest.mark.parametrize(
    "statement", ["UPDATE stored_events SET topic = topic", "DELETE FROM stored_events"]
)
def test_a_raw_connection_cannot_rewrite_or_delete_events(tmp_path: Path, statement: str):
    # Given a store with a recorded thread
    record_one_thread(f"sqlite:///{tmp_path / 'h.db'}")
    raw = sqlite3.connect(tmp_path / "h.db")
    count = raw.execute("SELECT COUNT(*) FROM stored_events").fetchone()[0]
    # When someone with the file tries to change or remove events
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        raw.execute(statement)
    # Then every event is still there
    assert raw.execute("SELECT COUNT(*) FROM stored_events").fetchone()[0] == count > 0


def test_commits_use_normal_synchronous_unless_full_is_asked_for(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    assert synchronous_level(url) == 1  # NORMAL
    assert synchronous_level(url + "?synchronous=full") == 2  # FULL


def test_an_unknown_synchronous_level_is_a_clear_error(tmp_path: Path):
    with pytest.raises(StoreURLError, match=r"synchronous='sometimes'.* must be normal or full"):
        open_store(f"sqlite:///{tmp_path / 's.db'}?synchronous=sometimes")


def test_an_unknown_option_is_a_clear_error(tmp_path: Path):
    with pytest.raises(StoreURLError, match="Unknown option 'synchronus'"):
        open_store(f"sqlite:///{tmp_path / 's.db'}?synchronus=full")


def test_a_reader_is_served_while_a_writer_waits_for_the_write_lock(tmp_path: Path):
    # Given a commit in progress and a second writer waiting for it
    with open_store(f"sqlite:///{tmp_path / 'w.db'}") as store:
        pool = store.recorder.datastore.pool
        writing = pool.get_connection(is_writer=True)
        waiting = threading.Thread(
            target=lambda: pool.put_connection(pool.get_connection(is_writer=True))
        )
        waiting.start()
        waiting.join(timeout=0.2)
        assert waiting.is_alive()  # blocked on the write lock
        try:
            # When a reader asks for a connection
            reading = pool.get_connection(timeout=1, is_writer=False)
            # Then it gets one at once (WAL readers wait for no writer)
            pool.put_connection(reading)
        finally:
            pool.put_connection(writing)
            waiting.join()


def test_stores_on_one_file_take_turns_on_one_write_lock(tmp_path: Path):
    # Given two stores on one file, the first in the middle of a commit
    url = f"sqlite:///{tmp_path / 'g.db'}"
    with open_store(url) as first, open_store(url) as second:
        writing = first.recorder.datastore.pool.get_connection(is_writer=True)
        try:
            # Then the second store's writer waits for the first in this process, rather
            # than meeting it at SQLite's lock (whose busy handler sleeps)
            with pytest.raises(ConnectionUnavailableError):
                second.recorder.datastore.pool.get_connection(timeout=0.05, is_writer=True)
        finally:
            first.recorder.datastore.pool.put_connection(writing)
        # And once the first is done, the second writes
        second_pool = second.recorder.datastore.pool
        second_pool.put_connection(second_pool.get_connection(timeout=1, is_writer=True))


def test_a_writers_connection_is_kept_for_writers_and_closes_with_the_store(tmp_path: Path):
    # Given a store whose writer has committed and given its connection back
    with open_store(f"sqlite:///{tmp_path / 'k.db'}") as store:
        pool = store.recorder.datastore.pool
        first = pool.get_connection(is_writer=True)
        pool.put_connection(first)
        # When a reader asks for a connection, and then the next writer, in another thread
        reading = pool.get_connection(is_writer=False)
        got: list[object] = []
        later = threading.Thread(target=lambda: got.append(pool.get_connection(is_writer=True)))
        later.start()
        later.join()
        # Then the reader got another, and the writer the one kept, which still writes
        assert reading is not first
        assert got == [first]
        first.cursor().execute("SELECT 1")
        pool.put_connection(first)
        pool.put_connection(reading)
    # And closing the store closes it, as every other connection of the pool
    assert first.closed


def test_a_writer_after_a_failed_commit_commits(tmp_path: Path):
    # Given a commit refused (a version repeated), on the writers' connection
    originator = uuid4()
    with open_store(f"sqlite:///{tmp_path / 'f.db'}") as store:
        store.recorder.insert_events([stored(originator, 1)])
        with pytest.raises(IntegrityError):
            store.recorder.insert_events([stored(originator, 1)])
        # When the next commit comes
        store.recorder.insert_events([stored(originator, 2)])
        # Then it is recorded
        assert [e.originator_version for e in store.recorder.select_events(originator)] == [1, 2]


def stored(originator: UUID, version: int) -> StoredEvent:
    return StoredEvent(originator, version, "tests:Happened", b'{"n":%d}' % version)


def test_a_commit_of_many_events_gets_their_rowids_as_notification_ids(tmp_path: Path):
    # Given a store with one event recorded
    with open_store(f"sqlite:///{tmp_path / 'n.db'}") as store:
        recorder = store.recorder
        first, other = uuid4(), uuid4()
        recorder.insert_events([stored(first, 1)])
        # When one commit records more events than one INSERT statement takes
        many = [stored(other, v) for v in range(1, INSERT_ROWS * 2 + 2)]
        ids = recorder.insert_events(many)
        # Then each event's notification id is its row's id, in order, with no gap
        assert ids == list(range(2, len(many) + 2))
        notifications = recorder.select_notifications(start=2, limit=len(many))
        assert [(n.id, n.originator_id, n.originator_version) for n in notifications] == [
            (i, other, event.originator_version) for i, event in zip(ids, many, strict=True)
        ]


def test_a_commit_that_repeats_a_version_records_none_of_its_events(tmp_path: Path):
    # Given a thread's first two events
    with open_store(f"sqlite:///{tmp_path / 'c.db'}") as store:
        recorder = store.recorder
        originator = uuid4()
        recorder.insert_events([stored(originator, 1), stored(originator, 2)])
        # When another writer commits versions 2 and 3 (2 is taken)
        with pytest.raises(IntegrityError):
            recorder.insert_events([stored(originator, 3), stored(originator, 2)])
        # Then nothing of that commit is recorded, and the next commit goes on from 2
        assert [e.originator_version for e in recorder.select_events(originator)] == [1, 2]
        assert recorder.insert_events([stored(originator, 3)]) == [3]


def test_a_threads_events_are_read_in_either_order_and_between_versions(tmp_path: Path):
    with open_store(f"sqlite:///{tmp_path / 'r.db'}") as store:
        recorder = store.recorder
        originator = uuid4()
        recorder.insert_events([stored(originator, v) for v in range(1, 8)])

        def versions(**query: int | bool) -> list[int]:
            return [e.originator_version for e in recorder.select_events(originator, **query)]

        assert versions() == [1, 2, 3, 4, 5, 6, 7]
        assert versions(gt=2, lte=5) == [3, 4, 5]
        assert versions(desc=True, limit=2) == [7, 6]
        assert versions(gt=7, limit=1) == []
        assert recorder.select_events(originator, limit=1)[0].state == b'{"n":1}'


def test_a_read_of_a_file_that_is_not_a_store_raises_the_librarys_error(tmp_path: Path):
    # Given a store whose events table was replaced by something unreadable
    with open_store(f"sqlite:///{tmp_path / 'e.db'}") as store:
        recorder = store.recorder
        recorder.events_table_name = "no_such_table"
        # When a thread's events are read, then the error is the library's, not sqlite3's
        with pytest.raises(OperationalError, match="no_such_table"):
            recorder.select_events(uuid4())
