"""The projection runner: every event applied exactly once, with its position.

Given a recorded history, the runner brings the read models to the head of
the notification log, keeps each projection's position in the same
transaction as its rows (a failed batch changes neither), reports its lag,
lets a reader wait for a position, rebuilds from zero to the same rows, and
shares the work safely with a second runner. Store-backed tests run on each
store kind; the two-runner test needs a database both runners open (SQLite
file, PostgreSQL).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import pairwise
from typing import Any

import pytest

from domain.record.store import open_store
from domain.record.thread import WorkflowThread
from projections.catalog import all_projections
from projections.database import database_for
from projections.model_tables import POSITIONS
from projections.pending_approvals import PendingApprovals, PendingApprovalsProjection
from projections.runner import ProjectionRunner
from projections.thread_index import ThreadIndex, ThreadIndexProjection
from tests.projections.histories import (
    REVIEWER,
    answer,
    approval_graph,
    ask_for,
    positions,
    read_models,
    record_history,
)
from tests.projections.hold_point_histories import record_hold_points

NAMES = ("pending_approvals", "thread_index")


def both() -> list:
    return [PendingApprovalsProjection(), ThreadIndexProjection()]


@pytest.fixture
def runner(store):
    runner = ProjectionRunner(store, both())
    yield runner
    runner.close()


class BreaksOnAnAnswer(ThreadIndexProjection):
    """The thread index, failing on every InterruptResumed while `broken`."""

    broken = True

    def apply_batch(self, entries, cursor, db):
        for entry in entries:
            if self.broken and isinstance(entry.event, WorkflowThread.InterruptResumed):
                msg = f"cannot apply the event at position {entry.position}"
                raise RuntimeError(msg)
        super().apply_batch(entries, cursor, db)


# -- catching up -----------------------------------------------------------


def test_after_catching_up_every_position_is_the_head_and_the_lag_is_zero(store, runner):
    # Given
    record_history(store)

    # When
    runner.catch_up()

    # Then
    head = runner.head()
    assert head > 0
    assert [(s.name, s.position, s.head, s.lag) for s in runner.status()] == [
        (name, head, head, 0) for name in NAMES
    ]
    assert positions(runner.db) == dict.fromkeys(NAMES, head)


def test_catching_up_with_small_batches_still_reaches_the_head(store):
    # Given a history of many more events than a batch holds
    record_history(store)
    runner = ProjectionRunner(store, both(), batch_size=3)
    reported = []

    # When
    runner.catch_up(progress=lambda name, done, total: reported.append((name, done, total)))

    # Then
    head = runner.head()
    assert all(s.position == head for s in runner.status())
    assert {name: max(done for n, done, _ in reported if n == name) for name in NAMES} == (
        dict.fromkeys(NAMES, head)
    )
    assert ThreadIndex(runner.db).search().total == 7
    runner.close()


def test_catching_up_again_with_nothing_new_applies_nothing(store, runner):
    record_history(store)
    runner.catch_up()
    before = read_models(runner.db)

    applied = runner.catch_up()

    assert applied == 0
    assert read_models(runner.db) == before


def test_events_recorded_after_a_catch_up_are_applied_by_the_next(store, runner):
    # Given a runner up to date with one paused thread
    graph = approval_graph(store)
    ask_for(graph, "t1")
    runner.catch_up()

    # When the thread is answered and another started
    answer(graph, "t1")
    ask_for(graph, "t2")
    runner.catch_up()

    # Then
    assert [row.thread_id for row in PendingApprovals(runner.db).page().items] == ["t2"]
    assert all(s.lag == 0 for s in runner.status())


# -- lag -------------------------------------------------------------------


def test_a_new_runner_lags_by_the_whole_log(store):
    record_history(store)

    runner = ProjectionRunner(store, both())

    head = runner.head()
    assert [(s.position, s.lag) for s in runner.status()] == [(0, head)] * 2
    runner.close()


def test_the_lag_counts_the_events_recorded_since_the_last_catch_up(store, runner):
    # Given a runner up to date
    graph = approval_graph(store)
    ask_for(graph, "t1")
    ask_for(graph, "t2")
    runner.catch_up()
    caught = runner.head()

    # When two cancellations (one event each) are recorded
    store.cancel("t1", REVIEWER, "stopped")
    store.cancel("t2", REVIEWER, "stopped")

    # Then
    assert runner.head() == caught + 2
    assert [s.lag for s in runner.status()] == [2, 2]


# -- waiting for a position ------------------------------------------------


def test_waiting_for_a_position_no_one_applies_returns_false_after_the_timeout(store, runner):
    # Given a cancellation that no runner catches up with
    ask_for(approval_graph(store), "t1")
    runner.catch_up()
    position = store.cancel("t1", REVIEWER, "stopped")

    # When
    started = time.monotonic()
    reached = runner.wait(position, timeout=0.05)

    # Then
    assert reached is False
    assert time.monotonic() - started >= 0.04


def test_a_reader_waiting_for_its_write_sees_it_once_a_runner_has_caught_up(store, runner):
    # Given a write whose position the writer knows
    ask_for(approval_graph(store), "t1")
    position = store.cancel("t1", REVIEWER, "changed my mind")
    catching_up = threading.Thread(target=runner.catch_up)

    # When a runner catches up in another thread while the reader waits
    catching_up.start()
    reached = runner.wait(position, timeout=10)
    catching_up.join()

    # Then
    assert reached is True
    assert PendingApprovals(runner.db).page().total == 0


# -- rebuilding ------------------------------------------------------------


def test_a_rebuild_from_zero_gives_identical_rows(store, runner):
    # Given read models kept up to date while the history was recorded
    record_history(store, prefix="a-")
    runner.catch_up()
    record_history(store, prefix="b-")
    runner.catch_up()
    before = read_models(runner.db)

    # When
    runner.rebuild()

    # Then
    assert read_models(runner.db) == before
    assert all(s.lag == 0 for s in runner.status())


@pytest.mark.parametrize("rebuild_batch_size", [7, 10_000])
def test_a_rebuild_gives_every_read_model_the_rows_of_catching_up_event_by_event(
    store, rebuild_batch_size
):
    # Given every read model kept up to date one event per batch while two histories were
    # recorded, the hold points' stories with them (edits as_node, refused attempts)
    runner = ProjectionRunner(
        store, all_projections(), batch_size=1, rebuild_batch_size=rebuild_batch_size
    )
    record_history(store, prefix="a-")
    record_hold_points(store, prefix="a-")
    runner.catch_up()
    record_history(store, prefix="b-")
    record_hold_points(store, prefix="b-")
    runner.catch_up()
    every_model = tuple(runner.projections)
    before = read_models(runner.db, every_model)

    # When they are rebuilt in batches that split threads (7), or hold the whole log
    runner.rebuild()

    # Then
    assert read_models(runner.db, every_model) == before
    assert all(before.values())
    runner.close()


@pytest.mark.parametrize("name", NAMES)
def test_rebuilding_one_projection_by_name_gives_its_rows_again(store, runner, name):
    # Given
    record_history(store)
    runner.catch_up()
    before = read_models(runner.db, (name,))

    # When
    applied = runner.rebuild([name])

    # Then
    assert applied == runner.head()
    assert read_models(runner.db, (name,)) == before
    assert all(s.lag == 0 for s in runner.status())


def test_rebuilding_an_unknown_projection_is_refused_and_changes_nothing(store, runner):
    record_history(store)
    runner.catch_up()
    before = read_models(runner.db), positions(runner.db)

    with pytest.raises(ValueError, match=r"Unknown projection 'nope'.*pending_approvals"):
        runner.rebuild(["nope"])

    assert (read_models(runner.db), positions(runner.db)) == before


# -- exactly once ----------------------------------------------------------


def test_a_batch_that_fails_midway_changes_neither_rows_nor_position(store):
    # Given a runner up to date with a paused thread
    projection = BreaksOnAnAnswer()
    runner = ProjectionRunner(store, [projection])
    graph = approval_graph(store)
    ask_for(graph, "t1")
    runner.catch_up()
    before = read_models(runner.db, ("thread_index",)), positions(runner.db)

    # When one batch brings a new thread, then an answer the projection fails on
    ask_for(graph, "t2")
    answer(graph, "t1")
    with pytest.raises(RuntimeError, match="cannot apply"):
        runner.catch_up()

    # Then the new thread's rows, applied before the failure, were rolled back too
    assert (read_models(runner.db, ("thread_index",)), positions(runner.db)) == before
    runner.close()


def test_after_a_failed_batch_is_fixed_catching_up_gives_the_rows_of_a_clean_run(store):
    # Given a batch that failed midway
    projection = BreaksOnAnAnswer()
    runner = ProjectionRunner(store, [projection])
    graph = approval_graph(store)
    ask_for(graph, "t1")
    runner.catch_up()
    ask_for(graph, "t2")
    answer(graph, "t1")
    record_history(store)
    with pytest.raises(RuntimeError, match="cannot apply"):
        runner.catch_up()

    # When the projection is fixed and the runner catches up
    projection.broken = False
    runner.catch_up()
    recovered = read_models(runner.db, ("thread_index",))

    # Then
    assert runner.status()[0].lag == 0
    runner.rebuild()
    assert recovered == read_models(runner.db, ("thread_index",))
    runner.close()


def test_with_small_batches_a_failure_keeps_the_batches_before_the_failing_one(store):
    # Given a history with an answer somewhere after the start, in batches of 2
    projection = BreaksOnAnAnswer()
    runner = ProjectionRunner(store, [projection], batch_size=2)
    graph = approval_graph(store)
    for n in range(3):
        ask_for(graph, f"t{n}")
    answer(graph, "t1")
    log = store.recorder.select_notifications(start=1, limit=1000)
    batches = [[n.id for n in log[i : i + 2]] for i in range(0, len(log), 2)]
    failing = next(n.id for n in log if n.topic.endswith("InterruptResumed"))
    failing_batch = next(i for i, batch in enumerate(batches) if failing in batch)

    # When
    with pytest.raises(RuntimeError, match=f"position {failing}"):
        runner.catch_up()

    # Then the position is the end of the last batch before the failing one
    assert failing_batch > 0
    assert runner.status()[0].position == batches[failing_batch - 1][-1]
    runner.close()


# -- two runners -----------------------------------------------------------


@pytest.fixture(params=["sqlite", "postgres"])
def shared_store(request):
    """A store whose read models two runners reach through their own connections."""
    with open_store(request.getfixturevalue(f"{request.param}_url")) as store:
        yield store


def test_two_runners_catching_up_at_once_apply_every_event_once(shared_store):
    # Given a history, and two runners on the same database
    for prefix in ("a-", "b-", "c-"):
        record_history(shared_store, prefix=prefix)
    runners = [ProjectionRunner(shared_store, both(), batch_size=3) for _ in range(2)]
    start, errors, applied = threading.Barrier(2), [], []

    def catch_up(runner):
        start.wait()
        try:
            applied.append(runner.catch_up())
        except Exception as error:  # reported below, with the other runner's
            errors.append(error)

    # When both catch up at the same moment, in small batches
    workers = [threading.Thread(target=catch_up, args=(r,)) for r in runners]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)

    # Then neither failed (a repeated event would break a primary key), the
    # two applied the log once between them, both see the head, and the rows
    # are those of a single runner's rebuild
    assert errors == []
    head = runners[0].head()
    assert sum(applied) == head  # log events read, each once, for all read models
    assert [s.position for r in runners for s in r.status()] == [head] * 4
    together = read_models(runners[0].db)
    runners[1].rebuild()
    assert read_models(runners[0].db) == together
    for runner in runners:
        runner.close()


def test_a_runner_goes_on_from_positions_another_runner_moved_past_its_own(shared_store):
    # Given a runner that caught up, and another that caught up further since
    record_history(shared_store, prefix="a-")
    behind, ahead = (ProjectionRunner(shared_store, both(), batch_size=3) for _ in range(2))
    behind.catch_up()
    record_history(shared_store, prefix="b-")
    ahead.catch_up()
    moved_to = ahead.head()
    record_history(shared_store, prefix="c-")

    # When the first catches up again
    applied = behind.catch_up()

    # Then it applied only what neither had, and the rows are those of a rebuild
    assert applied == behind.head() - moved_to
    assert positions(behind.db) == dict.fromkeys(NAMES, behind.head())
    together = read_models(behind.db)
    ahead.rebuild()
    assert read_models(behind.db) == together
    for runner in (behind, ahead):
        runner.close()


@pytest.mark.parametrize("new_events", [False, True])
def test_a_runner_sees_positions_another_runner_moved_back(store, runner, new_events):
    # Given a runner that caught up, then a rebuild begun elsewhere: the models
    # cleared and their positions at zero
    record_history(store)
    runner.catch_up()
    caught_up = read_models(runner.db)
    with runner.db.transaction() as cursor:
        for projection in runner.projections.values():
            projection.clear(cursor, runner.db)
        cursor.execute(f"UPDATE {runner.db.table(POSITIONS)} SET position = 0")
    if new_events:
        record_history(store, prefix="later-")

    # When the runner catches up again
    runner.catch_up()

    # Then it applied the whole log again, not only what came after its last batch
    assert positions(runner.db) == dict.fromkeys(NAMES, runner.head())
    if not new_events:
        assert read_models(runner.db) == caught_up
    rebuilt = read_models(runner.db)
    runner.rebuild()
    assert read_models(runner.db) == rebuilt


def test_the_queue_can_be_read_while_another_runner_holds_a_batch_open(shared_store):
    # Given a runner stopped inside a batch, after applying a new interrupt
    ask_for(approval_graph(shared_store), "t1")
    inside, release = threading.Event(), threading.Event()

    class Held(PendingApprovalsProjection):
        def apply_batch(self, events, cursor, db):
            super().apply_batch(events, cursor, db)
            inside.set()
            release.wait(10)

    writer = ProjectionRunner(shared_store, [Held()])
    applying = threading.Thread(target=writer.catch_up)
    applying.start()
    assert inside.wait(10)

    # When a reader on its own connection reads the queue
    totals: list[int] = []
    reader_db = database_for(shared_store)
    reading = threading.Thread(
        target=lambda: totals.append(PendingApprovals(reader_db).page().total)
    )
    reading.start()
    reading.join(timeout=1.0)
    answered_while_open = not reading.is_alive()
    release.set()
    applying.join()
    reading.join()

    # Then it answers at once, from what was committed before the batch
    assert answered_while_open, "the read waited for the open batch"
    assert totals == [0]
    writer.close()
    reader_db.close()


# -- the projector's wake-ups ------------------------------------------------


def test_on_postgresql_a_commit_wakes_a_projector_long_before_its_poll(postgres_url):
    # Given a projector that looks at the log every 60 s, past its first look
    with open_store(postgres_url) as store:
        ask_for(approval_graph(store), "t0")
        runner, stop = ProjectionRunner(store, both()), threading.Event()
        projector = threading.Thread(target=runner.run_forever, args=(stop, 60.0))
        projector.start()
        try:
            assert runner.wait(runner.head(), timeout=20)

            # When an interrupt is recorded
            ask_for(approval_graph(store), "t1")
            head = runner.head()

            # Then the commit's NOTIFY wakes it: the queue has the row within seconds
            assert runner.wait(head, timeout=20)
            queue = PendingApprovals(runner.db).page().items
            assert [row.thread_id for row in queue] == ["t0", "t1"]
        finally:
            stop.set()
            ask_for(approval_graph(store), "t2")  # a last commit wakes it to see `stop`
            projector.join(20)
        assert not projector.is_alive()
        runner.close()


class CountedRunner(ProjectionRunner):
    """A runner that notes when each of its catch-ups begins."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.began: list[float] = []

    def catch_up(self, *args: Any, **kwargs: Any) -> int:
        self.began.append(time.monotonic())
        return super().catch_up(*args, **kwargs)


def test_on_postgresql_a_stream_of_commits_is_applied_at_most_one_batch_a_gather(postgres_url):
    # Given a projector that gathers commits for 0.5 s, past its first look
    gather = 0.5
    with open_store(postgres_url) as store:
        graph = approval_graph(store)
        ask_for(graph, "t0")
        runner, stop = CountedRunner(store, both()), threading.Event()
        projector = threading.Thread(
            target=runner.run_forever, args=(stop, 60.0), kwargs={"gather": gather}
        )
        projector.start()
        try:
            assert runner.wait(runner.head(), timeout=20)

            # When interrupts are recorded one commit at a time, each waking it
            for n in range(1, 6):
                ask_for(graph, f"t{n}")
            head = runner.head()

            # Then every one is applied, and no batch began within the gather of the last
            assert runner.wait(head, timeout=20)
            queue = PendingApprovals(runner.db).page().items
            assert [row.thread_id for row in queue] == [f"t{n}" for n in range(6)]
            began = runner.began
            gaps = [later - earlier for earlier, later in pairwise(began)]
            assert len(gaps) >= 1
            assert min(gaps) >= gather
        finally:
            stop.set()
            ask_for(graph, "t9")  # a last commit wakes it to see `stop`
            projector.join(20)
        assert not projector.is_alive()
        runner.close()


class Doorbell:
    """Wake-ups that only this test's commits ring: no other test's commit (which every
    projector on the same PostgreSQL database hears) starts a batch here."""

    def __init__(self) -> None:
        self.rung = threading.Event()

    def wait(self, stop: threading.Event, poll: float) -> None:
        self.rung.wait(poll)
        self.rung.clear()

    @contextmanager
    def wakeups(self, _: Any) -> Iterator[Doorbell]:
        yield self


def test_a_commit_after_a_quiet_spell_is_applied_without_the_gather():
    # Given a projector that gathers commits for 1 s, quiet for longer than that since its
    # last batch began (the gather counts from a batch's start, not from a wake-up)
    gather = 1.0
    with open_store("memory://") as store:
        graph = approval_graph(store)
        ask_for(graph, "t0")
        runner, stop, doorbell = CountedRunner(store, both()), threading.Event(), Doorbell()
        runner.db.wakeups = doorbell.wakeups  # type: ignore[method-assign]
        projector = threading.Thread(
            target=runner.run_forever, args=(stop, 60.0), kwargs={"gather": gather}
        )
        projector.start()
        try:
            assert runner.wait(runner.head(), timeout=20)
            quiet_until = runner.began[-1] + gather
            while time.monotonic() < quiet_until:
                time.sleep(quiet_until - time.monotonic())

            # When an interrupt is recorded, and its commit wakes the projector
            ask_for(graph, "t1")
            recorded = time.monotonic()
            doorbell.rung.set()

            # Then it is applied at once, well within the gather
            assert runner.wait(runner.head(), timeout=20)
            assert time.monotonic() - recorded < gather / 2
            assert len(runner.began) == 2
        finally:
            stop.set()
            doorbell.rung.set()
            projector.join(20)
        assert not projector.is_alive()
        runner.close()
