"""Group commit (saver/threads.py): given saves applied to a thread on a real SQLite store,
when they are committed, then one transaction takes every save applied so far, each save
returns only once on record, and a failed commit loses nothing it should not.

A gate around the store's `commit` holds a commit in flight (or fails it) at a chosen
moment; everything else is the real store."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from domain.access.actor import local_actor
from domain.oversight.hold_points import Oversight
from domain.record.application import NewEvents, Workflows
from domain.record.langgraph_record import UPDATE_TASK, Caller, SavedWrites
from domain.record.store import open_store
from domain.record.thread import WorkflowThread
from saver.threads import Save, Threads

THREAD = "t"
WAIT = 10.0  # seconds: a bound on waits that end at once when the code is right


@pytest.fixture
def store(tmp_path: Any) -> Iterator[Workflows]:
    with open_store(f"sqlite:///{tmp_path / 'threads.db'}") as opened:
        yield opened


def begin() -> WorkflowThread:
    return WorkflowThread.begin(
        thread_id=THREAD,
        graph_id="g",
        graph_digest="",
        channels={},
        metadata={},
        actor=local_actor(),
    )


def writes(task: str) -> Callable[[WorkflowThread, bool], Any]:
    """A change: a task's writes, recorded as WritesSaved (update_state's task)."""
    saved = SavedWrites(
        namespace="",
        checkpoint_id="c1",
        task_id=task,
        task_path=UPDATE_TASK,
        writes=[("x", task)],
    )
    caller = Caller(actor=local_actor(), configured_run_id="r")
    return lambda thread, _grow: thread.save_writes(saved, caller, Oversight())


def tasks_on_record(store: Workflows) -> list[str]:
    return [e.task_id for e in store.thread_events(THREAD) if type(e).__name__ == "WritesSaved"]


class Gate:
    """Wraps the store's commit: the first one waits, in flight, until `release`d (or
    raises `fail`); `commits` counts the commits that reached the store."""

    def __init__(self, store: Workflows, fail: BaseException | None = None) -> None:
        self.entered, self.released = threading.Event(), threading.Event()
        self.commits: list[int] = []
        self.fail = fail
        real = store.commit

        def commit(new: NewEvents, **kwargs: Any) -> int | None:
            first = not self.entered.is_set()
            if first:
                self.entered.set()
                assert self.released.wait(WAIT)
                if self.fail is not None:
                    raise self.fail
            self.commits.append(len(new.events))
            return real(new, **kwargs)

        store.commit = commit  # type: ignore[method-assign]

    def release(self) -> None:
        self.released.set()


def committing(threads: Threads, save: Save, **kwargs: Any) -> threading.Thread:
    """Commit `save` from another thread (as LangGraph's background saves do); an error
    it ends in stays on the save."""

    def run() -> None:
        with contextlib.suppress(Exception):
            threads.commit(save, **kwargs)

    worker = threading.Thread(target=run)
    worker.start()
    return worker


def test_saves_applied_while_a_commit_is_in_flight_are_committed_together(store):
    threads, gate = Threads(store), Gate(store)
    first = threads.apply(THREAD, writes("t1"), begin)
    worker = committing(threads, first)
    assert gate.entered.wait(WAIT)

    second = threads.apply(THREAD, writes("t2"), begin)
    third = threads.apply(THREAD, writes("t3"), begin)
    waiting = [committing(threads, second), committing(threads, third)]
    gate.release()
    for done in [worker, *waiting]:
        done.join(WAIT)

    assert all(save.done and save.error is None for save in (first, second, third))
    assert gate.commits == [2, 2]  # ThreadStarted and t1; then t2 and t3, in one commit
    assert tasks_on_record(store) == ["t1", "t2", "t3"]
    assert store.verify_chain(THREAD).ok


def test_a_lingering_save_is_committed_by_the_save_that_follows_it(store):
    threads, gate = Threads(store), Gate(store)
    gate.release()  # no commit is held
    first = threads.apply(THREAD, writes("t1"), begin)
    worker = committing(threads, first, linger=2 * WAIT)
    second = threads.apply(THREAD, writes("t2"), begin)
    threads.commit(second)

    worker.join(WAIT)
    assert not worker.is_alive()  # ended by the commit that took it along, not the linger
    assert first.done
    assert first.error is None
    assert gate.commits == [3]
    assert tasks_on_record(store) == ["t1", "t2"]


def test_a_lingering_save_taken_along_by_a_failed_commit_ends_in_its_error_at_once(store):
    threads, gate = Threads(store), Gate(store, fail=OSError("disk full"))
    gate.release()  # the next commit fails at once
    first = threads.apply(THREAD, writes("t1"), begin)
    worker = committing(threads, first, linger=2 * WAIT)
    second = threads.apply(THREAD, writes("t2"), begin)
    with pytest.raises(OSError, match="disk full"):
        threads.commit(second)

    worker.join(WAIT)
    assert not worker.is_alive()  # woken by the failed commit, not by the end of its linger
    assert isinstance(first.error, OSError)
    assert tasks_on_record(store) == []


def test_a_commit_refused_because_another_writer_appended_first_is_applied_again(store):
    ours, theirs = Threads(store), Threads(store)
    first = ours.apply(THREAD, writes("t1"), begin)
    theirs.save(THREAD, writes("other"), begin)  # another process commits first

    ours.commit(first)

    assert first.done
    assert first.error is None
    assert tasks_on_record(store) == ["other", "t1"]
    assert store.verify_chain(THREAD).ok


def test_a_change_that_raises_leaves_nothing_of_it_and_the_others_are_committed(store):
    threads = Threads(store)
    first = threads.apply(THREAD, writes("t1"), begin)

    def half_done(thread: WorkflowThread, grow: bool) -> None:
        writes("half")(thread, grow)
        msg = "the change failed after recording"
        raise RuntimeError(msg)

    with pytest.raises(RuntimeError, match="after recording"):
        threads.apply(THREAD, half_done, begin)
    threads.commit(first)

    assert tasks_on_record(store) == ["t1"]


def test_a_commit_that_fails_fails_its_saves_and_the_later_ones_are_committed(store):
    threads = Threads(store)
    threads.save(THREAD, writes("t0"), begin)
    gate = Gate(store, fail=OSError("disk full"))
    first = threads.apply(THREAD, writes("t1"), begin)
    worker = committing(threads, first)
    assert gate.entered.wait(WAIT)
    second = threads.apply(THREAD, writes("t2"), begin)
    gate.release()
    worker.join(WAIT)

    assert first.done
    assert isinstance(first.error, OSError)
    threads.commit(second)
    assert tasks_on_record(store) == ["t0", "t2"]


def test_a_reader_sees_only_what_is_committed_and_the_order_of_saves_sees_what_is_applied(
    store,
):
    threads = Threads(store)
    threads.save(THREAD, writes("t0"), begin)
    committed = store.thread(THREAD)
    assert committed is not None
    threads.apply(THREAD, writes("t1"), begin)

    def version(thread: WorkflowThread | None) -> int:
        assert thread is not None
        return thread.version

    assert threads.read(THREAD, version) == committed.version
    assert threads.read(THREAD, version, fresh=False) == committed.version + 1


def nothing(thread: WorkflowThread | None) -> None:
    assert thread is None


def test_a_thread_a_read_found_not_begun_is_begun_by_the_next_save_without_a_read(store):
    threads = Threads(store)
    threads.read(THREAD, nothing)  # LangGraph's get_tuple before a run's first save
    reads: list[str] = []
    real = store.thread

    def thread(thread_id: str, **kwargs: Any) -> WorkflowThread | None:
        reads.append(thread_id)
        return real(thread_id, **kwargs)

    store.thread = thread  # type: ignore[method-assign]

    threads.save(THREAD, writes("t1"), begin)

    assert reads == []
    assert tasks_on_record(store) == ["t1"]


def test_a_thread_begun_by_another_writer_after_the_read_gets_the_save_on_theirs(store):
    ours, theirs = Threads(store), Threads(store)
    ours.read(THREAD, nothing)
    theirs.save(THREAD, writes("other"), begin)  # another process begins it first

    ours.save(THREAD, writes("t1"), begin)

    assert tasks_on_record(store) == ["other", "t1"]
    assert [type(e).__name__ for e in store.thread_events(THREAD)].count("ThreadStarted") == 1
    assert store.verify_chain(THREAD).ok


# Parking: a task's writes that reach the saver before their step's checkpoint wait, parked,
# for the checkpoint's save, which applies them right after itself and commits them with it.

STEP = "c2"  # the key of the save the parked ones wait for


def waiting(_: WorkflowThread) -> bool:
    return True


def committing_parked(threads: Threads, save: Save, timeout: float = WAIT) -> threading.Thread:
    """`commit_parked` from another thread; an error it ends in stays on the save."""

    def run() -> None:
        with contextlib.suppress(Exception):
            threads.commit_parked(save, STEP, timeout)

    worker = threading.Thread(target=run)
    worker.start()
    return worker


def test_a_parked_save_is_applied_right_after_the_one_it_waits_for_and_committed_with_it(
    store,
):
    threads = Threads(store)
    threads.save(THREAD, writes("t0"), begin)
    gate = Gate(store)
    gate.release()
    parked = threads.park(THREAD, writes("t2"), begin, STEP, waiting)
    assert parked is not None
    worker = committing_parked(threads, parked)  # waits as long as need be

    threads.commit(threads.apply(THREAD, writes("t1"), begin, then=STEP))

    worker.join(WAIT)
    assert not worker.is_alive()
    assert parked.done
    assert parked.error is None
    assert gate.commits == [2]  # t1 and the parked t2, in one commit
    assert tasks_on_record(store) == ["t0", "t1", "t2"]


def test_a_save_parked_for_one_that_fails_is_applied_alone_and_commits_by_itself(store):
    threads = Threads(store)
    threads.save(THREAD, writes("t0"), begin)
    parked = threads.park(THREAD, writes("t2"), begin, STEP, waiting)
    assert parked is not None
    worker = committing_parked(threads, parked)

    def failing(thread: WorkflowThread, grow: bool) -> None:
        msg = "the checkpoint's save failed"
        raise RuntimeError(msg)

    with pytest.raises(RuntimeError, match="save failed"):
        threads.apply(THREAD, failing, begin, then=STEP)

    worker.join(WAIT)
    assert not worker.is_alive()  # woken at once: nothing else would commit it
    assert parked.done
    assert parked.error is None
    assert tasks_on_record(store) == ["t0", "t2"]


def test_a_parked_save_whose_change_raises_ends_in_its_error_and_the_other_is_committed(store):
    threads = Threads(store)
    threads.save(THREAD, writes("t0"), begin)

    def refused(thread: WorkflowThread, grow: bool) -> None:
        msg = "these writes are refused"
        raise ValueError(msg)

    parked = threads.park(THREAD, refused, begin, STEP, waiting)
    assert parked is not None

    threads.commit(threads.apply(THREAD, writes("t1"), begin, then=STEP))

    with pytest.raises(ValueError, match="refused"):
        threads.commit_parked(parked, STEP, WAIT)
    assert tasks_on_record(store) == ["t0", "t1"]


def test_a_parked_save_whose_awaited_save_does_not_come_is_applied_as_it_arrived(store):
    threads = Threads(store)
    threads.save(THREAD, writes("t0"), begin)
    parked = threads.park(THREAD, writes("t2"), begin, STEP, waiting)
    assert parked is not None
    began = time.monotonic()

    threads.commit_parked(parked, STEP, 0.2)

    assert time.monotonic() - began >= 0.2  # it waited its time, not returned at once
    assert tasks_on_record(store) == ["t0", "t2"]
    # and the save it waited for, coming late, applies nothing of it again
    threads.commit(threads.apply(THREAD, writes("t1"), begin, then=STEP))
    assert tasks_on_record(store) == ["t0", "t2", "t1"]


def test_nothing_is_parked_on_a_thread_not_at_hand_or_not_waiting(store):
    threads = Threads(store)
    assert threads.park(THREAD, writes("t1"), begin, STEP, waiting) is None  # never read
    threads.save(THREAD, writes("t0"), begin)

    assert threads.park(THREAD, writes("t1"), begin, STEP, lambda _: False) is None
    threads.commit(threads.apply(THREAD, writes("t2"), begin, then=STEP))
    assert tasks_on_record(store) == ["t0", "t2"]


def test_a_parked_save_whose_commit_another_writer_beats_is_applied_again_with_it(store):
    ours, theirs = Threads(store), Threads(store)
    ours.save(THREAD, writes("t0"), begin)
    parked = ours.park(THREAD, writes("t2"), begin, STEP, waiting)
    assert parked is not None
    worker = committing_parked(ours, parked)
    first = ours.apply(THREAD, writes("t1"), begin, then=STEP)  # t2 applied right after it
    theirs.save(THREAD, writes("other"), begin)  # another process commits first

    ours.commit(first)  # refused, read again, t1 and t2 applied on theirs, committed

    worker.join(WAIT)
    assert not worker.is_alive()
    assert parked.done
    assert parked.error is None
    assert tasks_on_record(store) == ["t0", "other", "t1", "t2"]
    assert store.verify_chain(THREAD).ok
