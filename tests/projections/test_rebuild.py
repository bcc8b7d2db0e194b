"""What a rebuild does besides applying the log again: readers' indexes and reading ahead.

A rebuild drops the indexes that only readers use, with the rows, and
creates them once after its last batch; a rebuild that dies midway leaves
rows a restarted runner completes, with every index back. On PostgreSQL the
log reader reads a catch-up's next batch while the current one is applied:
whatever range is asked for next, it gives the entries of reading it alone.
Store-backed tests run on each store kind.
"""

from __future__ import annotations

import threading

import pytest
from eventsourcing.utils import get_topic

from projections import cron_index, memory_items, oversight, pending_approvals, thread_index
from projections.catalog import all_projections
from projections.database import Database, database_for
from projections.log_reader import LogReader
from projections.runner import ProjectionRunner
from projections.thread_index import ThreadIndexProjection
from tests.projections.histories import read_models, record_history

READER_INDEXES = (
    pending_approvals.READER_INDEXES
    + thread_index.READER_INDEXES
    + oversight.READER_INDEXES
    + memory_items.READER_INDEXES
    + cron_index.READER_INDEXES
)
TOPICS = {get_topic(cls) for p in all_projections() for cls in p.event_classes}


def index_names(db: Database) -> set[str]:
    """The names of the indexes on the read models' tables."""
    with db.transaction(write=False) as cursor:
        if db.dialect == "postgres":
            cursor.execute(
                "SELECT indexrelid::regclass::text FROM pg_index "
                "WHERE indrelid::regclass::text LIKE %s",
                (f"{db.table('holdpoint_')}%".replace('"', ""),),
            )
            return {str(name).rpartition(".")[2] for (name,) in cursor.fetchall()}
        cursor.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL "
            "AND tbl_name LIKE 'holdpoint_%'"
        )
        return {str(name) for (name,) in cursor.fetchall()}


class ProcessDiedError(Exception):
    """The process ended: nothing after it runs."""


class DiesInItsSecondBatch(ThreadIndexProjection):
    """The thread index, as in a process killed during its second batch, once `armed`."""

    armed = False
    dead = False
    batches = 0

    def apply_batch(self, entries, cursor, db):
        if self.armed:
            self.batches += 1
            if self.batches == 2:
                self.dead = True
                raise ProcessDiedError
        super().apply_batch(entries, cursor, db)

    def create_tables(self, cursor, db):
        if self.dead:
            raise ProcessDiedError
        super().create_tables(cursor, db)


# -- the readers' indexes ------------------------------------------------------


def test_after_a_rebuild_every_read_model_has_the_indexes_it_was_created_with(store):
    # Given read models created and caught up
    runner = ProjectionRunner(store, all_projections(), batch_size=5, rebuild_batch_size=5)
    record_history(store)
    runner.catch_up()
    created = index_names(runner.db)

    # When they are rebuilt, all at once, then one alone
    runner.rebuild()
    after_all = index_names(runner.db)
    runner.rebuild(["oversight"])

    # Then
    assert {index.name for index in READER_INDEXES} <= created
    assert after_all == created
    assert index_names(runner.db) == created
    runner.close()


def test_a_rebuild_that_dies_midway_leaves_rows_a_restarted_runner_completes(store, store_kind):
    if store_kind == "memory":
        pytest.skip("a memory store's read models end with their runner")
    # Given read models caught up with a history
    record_history(store)
    dying = DiesInItsSecondBatch()
    runner = ProjectionRunner(store, [dying], batch_size=5, rebuild_batch_size=5)
    runner.catch_up()
    before, created = read_models(runner.db, ("thread_index",)), index_names(runner.db)

    # When its rebuild dies in its second batch
    dying.armed = True
    with pytest.raises(ProcessDiedError):
        runner.rebuild()
    runner.close()

    # Then some of the readers' indexes are gone, and the first batch's rows are there
    restarted = ProjectionRunner(store, [ThreadIndexProjection()])
    assert restarted.status()[0].position == 5
    # And a restarted runner has every index back, and catching up gives the rows again
    assert index_names(restarted.db) == created
    restarted.catch_up()
    assert read_models(restarted.db, ("thread_index",)) == before
    restarted.close()


def test_a_rebuild_that_dies_midway_has_not_yet_built_the_readers_indexes(store):
    record_history(store)
    dying = DiesInItsSecondBatch()
    runner = ProjectionRunner(store, [dying], batch_size=5, rebuild_batch_size=5)
    created = index_names(runner.db)

    dying.armed = True
    with pytest.raises(ProcessDiedError):
        runner.rebuild()

    assert {"holdpoint_threads_created", "holdpoint_threads_graph"} <= created
    assert not {"holdpoint_threads_created", "holdpoint_threads_graph"} & index_names(runner.db)
    runner.close()


# -- reading ahead ----------------------------------------------------------


def as_read(entries):
    return [(e.position, e.topic, e.key, e.at, e.thread, vars(e.event)) for e in entries]


@pytest.mark.parametrize(
    ("announced", "asked"),
    [(20, 20), (20, 14), (14, 20)],
    ids=["the range announced", "a shorter range", "a longer range"],
)
def test_the_range_read_after_announcing_it_reads_as_if_read_alone(store, announced, asked):
    # Given a history, and every topic the read models follow
    record_history(store)
    record_history(store, prefix="b-")
    reader = LogReader(store, database_for(store))

    # When a range is read, announcing the next, and then a next range is read
    reader.read(0, 10, TOPICS, announced)
    entries = reader.read(10, asked, TOPICS)

    # Then it reads as a new reader reads it (after the same start)
    fresh = LogReader(store, database_for(store))
    fresh.read(0, 10, TOPICS)
    assert entries
    assert as_read(entries) == as_read(fresh.read(10, asked, TOPICS))
    reader.close()


def test_a_range_that_does_not_start_where_the_announced_one_did_reads_as_if_read_alone(store):
    # Given a range read, announcing the next
    record_history(store)
    reader = LogReader(store, database_for(store))
    reader.read(0, 5, TOPICS, 10)

    # When another runner moved the positions, and the next range starts elsewhere
    entries = reader.read(7, 12, TOPICS)

    # Then
    assert as_read(entries) == as_read(LogReader(store, database_for(store)).read(7, 12, TOPICS))
    reader.close()


def test_a_first_range_read_ahead_reads_as_if_read_alone(store, store_kind):
    # Given a history
    record_history(store)
    reader = LogReader(store, database_for(store))

    # When a first range is read ahead (as a rebuild does while it clears the tables), then read
    started = reader.read_ahead(0, 10, TOPICS)
    entries = reader.read(0, 10, TOPICS)

    # Then it was read ahead on PostgreSQL alone, and reads as a new reader reads it
    assert started == (store_kind == "postgres")
    assert entries
    assert as_read(entries) == as_read(LogReader(store, database_for(store)).read(0, 10, TOPICS))
    reader.close()


def test_a_catch_up_in_many_batches_leaves_no_thread_reading_ahead(store):
    # Given a history many batches long
    record_history(store)
    runner = ProjectionRunner(store, all_projections(), batch_size=3)

    # When the runner catches up, batch after batch
    runner.catch_up()

    # Then the reading ahead stopped with the last batch
    assert not [t for t in threading.enumerate() if t.name.startswith("projections-read")]
    assert all(status.lag == 0 for status in runner.status())
    runner.close()


def test_closing_a_runner_whose_catch_up_failed_midway_stops_its_reading_ahead(store):
    # Given a runner whose catch-up failed in its second batch, with the third being read
    record_history(store)
    failing = DiesInItsSecondBatch()
    failing.armed = True
    runner = ProjectionRunner(store, [failing], batch_size=3)
    with pytest.raises(ProcessDiedError):
        runner.catch_up()

    # When
    runner.close()

    # Then
    assert not [t for t in threading.enumerate() if t.name.startswith("projections-read")]
