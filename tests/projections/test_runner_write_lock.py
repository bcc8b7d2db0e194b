"""On SQLite a projector works a batch out before it takes the file's write lock.

SQLite has one write lock per file, and the store's writers need it too. So
the runner works a batch's rows out in a read transaction and takes the lock
only to write them, with the new positions, in one transaction. Exactly once
still holds: a batch worked out while another runner applied the same
positions is dropped, not written twice.
"""

from __future__ import annotations

import threading

import pytest

from domain.record.store import open_store
from projections.database import SQLiteDatabase, StagedCursor
from projections.pending_approvals import PendingApprovals, PendingApprovalsProjection
from projections.runner import ProjectionRunner
from tests.projections.histories import (
    approval_graph,
    ask_for,
    positions,
    read_models,
    record_history,
)


class HeldOnce(PendingApprovalsProjection):
    """The approvals queue, whose first batch waits inside `apply_batch` until released."""

    def __init__(self) -> None:
        super().__init__()
        self.inside, self.release = threading.Event(), threading.Event()

    def apply_batch(self, entries, cursor, db):
        super().apply_batch(entries, cursor, db)
        if not self.inside.is_set():
            self.inside.set()
            self.release.wait(10)


def test_the_stores_writers_go_on_while_a_projector_works_a_batch_out(sqlite_url):
    # Given a projector in the middle of working out a batch
    with open_store(sqlite_url) as store:
        graph = approval_graph(store)
        ask_for(graph, "t1")
        held = HeldOnce()
        runner = ProjectionRunner(store, [held])
        applying = threading.Thread(target=runner.catch_up)
        applying.start()
        assert held.inside.wait(10)

        # When the store records a new thread meanwhile
        recording = threading.Thread(target=ask_for, args=(graph, "t2"))
        recording.start()
        recording.join(timeout=2)
        recorded_meanwhile = not recording.is_alive()
        held.release.set()
        applying.join(timeout=30)
        recording.join(timeout=30)

        # Then the commit did not wait for the batch, and the next pass applies it
        assert recorded_meanwhile, "the store's commit waited for the projector's batch"
        runner.catch_up()
        assert [a.thread_id for a in PendingApprovals(runner.db).page().items] == ["t1", "t2"]
        runner.close()


def test_a_batch_another_runner_applied_while_it_was_worked_out_is_not_written_again(
    sqlite_url,
):
    # Given a projector in the middle of working out its first batch
    with open_store(sqlite_url) as store:
        record_history(store)
        held = HeldOnce()
        slow = ProjectionRunner(store, [held])
        quick = ProjectionRunner(store, [PendingApprovalsProjection()])
        applied: list[int] = []
        applying = threading.Thread(target=lambda: applied.append(slow.catch_up()))
        applying.start()
        assert held.inside.wait(10)

        # When another runner applies the whole log meanwhile, and then the first goes on
        try:
            applied.append(quick.catch_up())
        finally:
            held.release.set()
            applying.join(timeout=30)

        # Then the log was applied once between them, and the rows are those of a rebuild
        head = quick.head()
        assert sorted(applied) == [0, head]
        assert positions(quick.db) == {"pending_approvals": head}
        caught_up = read_models(quick.db, ("pending_approvals",))
        quick.rebuild()
        assert read_models(quick.db, ("pending_approvals",)) == caught_up
        slow.close()
        quick.close()


def test_a_staged_write_has_no_rows_until_it_is_replayed():
    # Given a cursor that keeps writes for later, on an in-memory database
    db = SQLiteDatabase(":memory:")
    with db.transaction() as cursor:
        cursor.execute("CREATE TABLE t (n INTEGER)")
    with db.transaction(write=False) as cursor:
        staged = StagedCursor(cursor)
        # When a read and two writes go through it
        staged.execute("SELECT COUNT(*) FROM t")
        assert staged.fetchone() == (0,)
        staged.executemany("INSERT INTO t VALUES (%s)", [(1,), (2,)])
        staged.execute("DELETE FROM t WHERE n = %s", (1,))
        # Then the writes have no result yet
        with pytest.raises(TypeError, match="no rows"):
            staged.fetchall()
    # And replayed in a write transaction, they take effect in order
    with db.transaction() as cursor:
        staged.replay(cursor)
    with db.transaction(write=False) as cursor:
        cursor.execute("SELECT n FROM t")
        assert cursor.fetchall() == [(2,)]
    db.close()
