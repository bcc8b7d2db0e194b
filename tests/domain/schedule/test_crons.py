"""Crons as recorded facts: made, changed and deleted with who did it; fired once for
each due time however many schedulers try, missed times skipped, and never after their
end time or while disabled. Every test runs on each store kind."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from domain.errors import CronNotFoundError, InvalidScheduleError
from domain.schedule.cron import Cron, cron_uuid
from domain.schedule.crons import Crons

AGENT = {"id": "agent-1", "role": "agent"}
ADMIN = {"id": "ada", "role": "admin"}


@pytest.fixture
def crons(store):
    return Crons(store)


def make(crons, **overrides):
    fields = {
        "graph_id": "refund",
        "thread_id": "t-1",
        "schedule": "0 * * * *",
        "payload": {"input": {"refund_amount": 5.0}},
        "actor": AGENT,
    }
    return crons.schedule(**{**fields, **overrides})


def kinds(store, cron):
    return [type(e).__name__ for e in store.events.get(cron_uuid(cron.cron_id))]


def test_a_cron_is_recorded_with_who_made_it_and_when_it_is_next_due(store, crons):
    cron = make(crons)
    [made] = store.events.get(cron_uuid(cron.cron_id))
    assert isinstance(made, Cron.CronScheduled)
    assert made.actor == AGENT
    due = crons.get(cron.cron_id).next_due()
    assert due is not None
    assert (due.minute, due.second) == (0, 0)
    assert timedelta(0) < due - made.timestamp <= timedelta(hours=1)


def test_a_due_cron_fires_once_and_then_is_due_at_its_next_time(store, crons):
    cron = make(crons)
    due = cron.next_due()
    assert crons.fire(cron.cron_id, due - timedelta(seconds=1)) is None  # not yet
    firing = crons.fire(cron.cron_id, due)
    assert firing is not None
    assert (firing.thread_id, firing.due_at) == ("t-1", due)
    assert crons.fire(cron.cron_id, due) is None  # fired already
    assert crons.get(cron.cron_id).next_due() == due + timedelta(hours=1)
    assert kinds(store, cron) == ["CronScheduled", "CronFired"]


def test_of_schedulers_racing_for_one_due_time_exactly_one_fires(store, crons):
    cron = make(crons)
    due = cron.next_due()
    barrier, fired = threading.Barrier(4), []

    def scheduler():
        barrier.wait()
        firing = Crons(store).fire(cron.cron_id, due)
        if firing is not None:
            fired.append(firing.run_id)

    threads = [threading.Thread(target=scheduler) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(fired) == 1
    assert kinds(store, cron) == ["CronScheduled", "CronFired"]


def test_times_missed_while_no_scheduler_ran_fire_once_not_each(store, crons):
    cron = make(crons)
    due = cron.next_due()
    late = due + timedelta(hours=5, minutes=10)
    assert crons.fire(cron.cron_id, late) is not None
    # the next time is after the late firing, not the five hours missed
    assert crons.get(cron.cron_id).next_due() > late


def test_a_cron_without_a_thread_runs_each_time_on_a_new_one(crons):
    cron = make(crons, thread_id=None)
    first = crons.fire(cron.cron_id, cron.next_due())
    second = crons.fire(cron.cron_id, crons.get(cron.cron_id).next_due())
    assert first.thread_id != second.thread_id


def test_a_disabled_cron_or_one_past_its_end_time_is_never_due(crons):
    end = datetime.now(UTC) + timedelta(minutes=1)
    ending = make(crons, schedule="0 0 1 1 *", end_time=end.isoformat())
    assert ending.next_due() is None
    paused = make(crons, enabled=False)
    assert paused.next_due() is None
    assert crons.fire(paused.cron_id, datetime.now(UTC) + timedelta(days=400)) is None


def test_changes_and_the_deletion_are_recorded_with_who_and_a_no_change_records_nothing(
    store, crons
):
    cron = make(crons)
    crons.update(cron.cron_id, {"schedule": "*/5 * * * *", "enabled": False}, ADMIN)
    crons.update(cron.cron_id, {"enabled": False}, ADMIN)  # as it is
    crons.delete(cron.cron_id, ADMIN)
    assert kinds(store, cron) == ["CronScheduled", "CronUpdated", "CronDeleted"]
    updated = list(store.events.get(cron_uuid(cron.cron_id)))[1]
    assert updated.changes == {"schedule": "*/5 * * * *", "enabled": False}
    assert updated.actor == ADMIN
    with pytest.raises(CronNotFoundError):
        crons.get(cron.cron_id)


@pytest.mark.parametrize(
    ("overrides", "says"),
    [
        ({"schedule": "every hour"}, "5"),
        ({"timezone": "Nowhere/Land"}, "time zone"),
        ({"end_time": "tomorrow"}, "ISO 8601"),
        ({"end_time": "2030-01-01T00:00:00"}, "no time zone"),
    ],
)
def test_a_cron_that_cannot_be_kept_is_refused_recording_nothing(store, crons, overrides, says):
    head = store.recorder.max_notification_id()
    with pytest.raises(InvalidScheduleError, match=says):
        make(crons, **overrides)
    assert store.recorder.max_notification_id() == head


def test_a_firing_whose_run_never_started_is_taken_up_once(store, crons):
    cron = make(crons)
    firing = crons.fire(cron.cron_id, cron.next_due())
    taken = [Crons(store).recover(cron.cron_id, firing.run_id, ADMIN) for _ in range(2)]
    assert [t is not None for t in taken] == [True, False]
    assert (taken[0].run_id, taken[0].thread_id) == (firing.run_id, firing.thread_id)
    assert crons.recover(cron.cron_id, "another-run", ADMIN) is None
    assert kinds(store, cron) == ["CronScheduled", "CronFired", "CronRunRecovered"]
