"""The runner quarantines an event it cannot decode, and goes on.

Given a real store (a SQLite file, a PostgreSQL schema) with every kind of event,
one of its rows damaged with raw SQL (`tests/damaged_store.py`), when a runner
catches up: it passes the event by and reaches the head, every other event is
applied as on the undamaged store, and the event is in `holdpoint_quarantine`
once, however often it is met again (a rebuild); repaired, it leaves the
quarantine at the next rebuild. A JSON cut short, a topic that names no class
and a state missing a field are each quarantined, with why.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from domain.errors import ThreadUnreadableError
from domain.record.application import Workflows
from domain.record.store import open_store
from domain.record.thread import WorkflowThread
from projections.catalog import all_projections, runner_for
from projections.quarantine import Quarantine, QuarantinedEvent
from projections.runner import ProjectionRunner
from tests.conftest import store_url
from tests.damaged_store import Damage, Recorded, record_every_kind
from tests.integrity.tamper import Row
from tests.projections.histories import READ_MODEL_TABLES, positions, read_models

ALL_MODELS = tuple(READ_MODEL_TABLES)


@dataclass
class Damaged:
    url: str
    store: Workflows
    recorded: Recorded
    damage: Damage
    row: Row  # the damaged event's row, as it was
    met: list[QuarantinedEvent] = field(default_factory=list)  # what runners said

    def runner(self, batch_size: int = 1000, rebuild_batch_size: int = 10_000) -> ProjectionRunner:
        """A runner of every read model, noting what it quarantines in `met`."""
        return ProjectionRunner(
            self.store,
            all_projections(),
            batch_size=batch_size,
            rebuild_batch_size=rebuild_batch_size,
            on_quarantine=self.met.append,
        )


@pytest.fixture(params=["sqlite", "postgres"])
def recorded(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Recorded]]:
    url = store_url(request.param, tmp_path, request)
    with open_store(url) as store:
        yield url, record_every_kind(store)


@pytest.fixture
def damaged(recorded: tuple[str, Recorded]) -> Iterator[Damaged]:
    """The store, with the NodeCompleted of thread `done` (a run without a human) to damage."""
    url, history = recorded
    with open_store(url) as store:
        damage = Damage(url, store)
        row = next(
            r
            for r in damage.tamper.thread_rows("done")
            if r[3].endswith("WorkflowThread.NodeCompleted")
        )
        yield Damaged(url, store, history, damage, row)
        damage.close()


def test_a_json_cut_short_is_quarantined_and_the_runner_reaches_the_head(damaged):
    # Given the event's JSON cut short
    damaged.damage.cut_short(damaged.row)
    runner = damaged.runner()

    # When the runner catches up
    runner.catch_up()

    # Then every read model is at the head
    head = runner.head()
    assert set(positions(runner.db).values()) == {head}
    # And the event is quarantined, once, named, and said so once
    [quarantined] = Quarantine(runner.db).events()
    position, key, version, topic, _ = damaged.row
    assert (
        quarantined.position,
        quarantined.originator_id,
        quarantined.thread_id,
        quarantined.originator_version,
        quarantined.topic,
    ) == (position, key, "done", version, topic)
    assert quarantined.error.startswith("its stored state is not JSON (JSONDecodeError: ")
    assert damaged.met == [quarantined]
    runner.close()


def test_every_other_event_is_applied_as_on_the_undamaged_store(tmp_path):
    # Given a SQLite store, a copy of it, and the original's ThreadCompleted of `done` damaged
    url = f"sqlite:///{tmp_path / 'damaged.db'}"
    with open_store(url) as store:
        record_every_kind(store)
    shutil.copy(tmp_path / "damaged.db", tmp_path / "sound.db")
    with open_store(url) as store:
        damage = Damage(url, store)
        [row] = [r for r in damage.tamper.thread_rows("done") if r[3].endswith(".ThreadCompleted")]
        damage.cut_short(row)
        damage.close()

        # When each is projected
        runner = runner_for(store)
        runner.catch_up()
        damaged_rows = read_models(runner.db, ALL_MODELS)
        runner.close()
    with open_store(f"sqlite:///{tmp_path / 'sound.db'}") as sound:
        runner = runner_for(sound)
        runner.catch_up()
        sound_rows = read_models(runner.db, ALL_MODELS)
        runner.close()

    # Then their rows differ in the damaged thread's alone
    def others(rows: dict[str, list[tuple]]) -> dict[str, list[tuple]]:
        return {
            t: [r for r in found if "done" not in r and row[1] not in r]
            for t, found in rows.items()
        }

    assert others(damaged_rows) == others(sound_rows)
    assert damaged_rows != sound_rows  # `done` is not indexed as completed


def test_a_rebuild_meets_it_again_and_keeps_its_one_row(damaged):
    # Given the event quarantined by a catch-up
    damaged.damage.cut_short(damaged.row)
    runner = damaged.runner()
    runner.catch_up()
    [first] = Quarantine(runner.db).events()

    # When the read models are rebuilt from zero
    runner.rebuild()

    # Then it is met again, and its row is the one first recorded
    assert Quarantine(runner.db).events() == [first]
    assert [event.position for event in damaged.met] == [first.position] * 2
    assert set(positions(runner.db).values()) == {runner.head()}
    runner.close()


def test_a_repaired_event_leaves_the_quarantine_at_the_next_rebuild(damaged):
    # Given the event quarantined
    damaged.damage.cut_short(damaged.row)
    runner = damaged.runner()
    runner.catch_up()
    assert Quarantine(runner.db).count() == 1

    # When its row is put back as it was, and the read models rebuilt
    damaged.damage.tamper.set_state(damaged.row[0], damaged.row[4])
    runner.rebuild()

    # Then nothing is quarantined, and the thread reads again
    assert Quarantine(runner.db).events() == []
    assert damaged.store.thread("done") is not None
    runner.close()


def test_small_batches_each_commit_past_the_event(damaged):
    # Given the event cut short, and a runner applying two positions per batch
    damaged.damage.cut_short(damaged.row)
    runner = damaged.runner(batch_size=2, rebuild_batch_size=2)

    # When it catches up
    runner.catch_up()

    # Then it reached the head, the event quarantined once
    assert set(positions(runner.db).values()) == {runner.head()}
    assert [event.position for event in Quarantine(runner.db).events()] == [damaged.row[0]]
    runner.close()


def test_a_topic_that_names_no_class_is_quarantined(damaged):
    # Given the event's topic renamed to a class that does not exist
    damaged.damage.rename_topic(damaged.row)
    runner = damaged.runner()

    # When
    runner.catch_up()

    # Then
    [quarantined] = Quarantine(runner.db).events()
    assert quarantined.topic == damaged.row[3] + "Renamed"
    assert quarantined.error == "its topic names no event class"
    assert set(positions(runner.db).values()) == {runner.head()}
    runner.close()


def test_a_state_missing_a_field_is_quarantined_and_its_thread_cannot_be_read(damaged):
    # Given the node's update taken out of its (well-formed) JSON
    damaged.damage.drop_field(damaged.row, "update")
    runner = damaged.runner()

    # When
    runner.catch_up()

    # Then the runner says which field is missing
    [quarantined] = Quarantine(runner.db).events()
    assert quarantined.error == "its stored state lacks the field(s) update"
    # And reading the thread says so too, instead of failing where the field is read
    with pytest.raises(ThreadUnreadableError) as refused:
        damaged.store.thread("done")
    assert (refused.value.thread_id, refused.value.version) == ("done", damaged.row[2])
    assert refused.value.why == "its stored state lacks the field(s) update"
    runner.close()


def test_a_damaged_thread_start_is_quarantined_under_the_thread_it_still_names(damaged):
    # Given thread `done`'s first event cut short (its thread id, near the start, is kept)
    start = damaged.damage.tamper.thread_rows("done")[0]
    assert start[3].endswith(WorkflowThread.ThreadStarted.__name__)
    damaged.damage.cut_short(start)
    runner = damaged.runner()

    # When
    runner.catch_up()

    # Then the start is quarantined, named by its thread; its later events are applied to
    # no thread (the read models know no thread of theirs)
    [quarantined] = Quarantine(runner.db).events()
    assert (quarantined.position, quarantined.thread_id) == (start[0], "done")
    assert set(positions(runner.db).values()) == {runner.head()}
    runner.close()
