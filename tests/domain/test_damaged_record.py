"""A thread whose stored event cannot be decoded is refused as unreadable, by every read.

Given a real store (a SQLite file, a PostgreSQL schema) and one event of a thread
damaged with raw SQL (`tests/damaged_store.py`), every way the store reads that
thread raises ThreadUnreadableError naming the thread, the version and why, never
the library's error from deep inside a fold; another thread reads as ever. A
snapshot is a cache: one that cannot be decoded is passed by, and the thread is
folded from its events.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from eventsourcing.persistence import MapperDeserialisationError

from domain.errors import ThreadUnreadableError
from domain.record.application import Workflows
from domain.record.store import open_store
from domain.record.thread_uuids import thread_uuid
from tests.conftest import store_url
from tests.damaged_store import Damage
from tests.graphs import counter_loop_graph
from tests.integrity.tamper import Tamper
from tests.projections.histories import answer, approval_graph, ask_for, config

READS: dict[str, Callable[[Workflows, str], Any]] = {
    "thread": lambda store, t: store.thread(t),
    "thread at its head": lambda store, t: store.thread(t, version=5),
    "thread_at the damaged version": lambda store, t: store.thread_at(t, 3),
    "the events read ahead of a version": lambda store, t: list(
        store.thread_at(t, 2, ahead=3).after  # type: ignore[union-attr]
    ),
    "thread_events": lambda store, t: store.thread_events(t),
    "iter_thread_events": lambda store, t: list(store.iter_thread_events(t)),
    "verify_chain": lambda store, t: store.verify_chain(t),
}


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return store_url(request.param, tmp_path, request)


@pytest.fixture
def damaged(url: str) -> Iterator[Workflows]:
    """Threads t1 and t2 asked and answered (5 events each), t1's version 3 cut short."""
    with open_store(url) as store:
        graph = approval_graph(store)
        for thread_id in ("t1", "t2"):
            ask_for(graph, thread_id)
            answer(graph, thread_id)
        damage = Damage(url, store)
        [row] = [r for r in damage.tamper.thread_rows("t1") if r[2] == 3]
        damage.cut_short(row)
        damage.close()
        yield store


@pytest.mark.parametrize("read", list(READS.values()), ids=list(READS))
def test_every_read_of_a_damaged_thread_says_which_event_cannot_be_decoded(damaged, read):
    with pytest.raises(ThreadUnreadableError) as refused:
        read(damaged, "t1")

    error = refused.value
    assert (error.thread_id, error.version) == ("t1", 3)
    assert error.why.startswith("its stored state is not JSON")
    assert str(error).startswith("Thread 't1' cannot be read: its event at version 3 (")
    assert str(error).endswith("run `holdpoint verify` to see what is wrong")


@pytest.mark.parametrize("read", list(READS.values()), ids=list(READS))
def test_another_thread_of_the_store_reads_as_ever(damaged, read):
    assert read(damaged, "t2") is not None


def test_a_long_thread_damaged_after_its_snapshot_is_refused_too(url):
    # Given a thread of 100 steps (read through its snapshots), its last event cut short
    with open_store(url) as store:
        counter_loop_graph(store).invoke({"n": 0}, config("long"))
        damage = Damage(url, store)
        last = max(damage.tamper.thread_rows("long"), key=lambda r: r[2])
        damage.cut_short(last)
        damage.close()

        # When it is read, then
        with pytest.raises(ThreadUnreadableError) as refused:
            store.thread("long")
        assert (refused.value.thread_id, refused.value.version) == ("long", last[2])


def test_a_snapshot_that_cannot_be_decoded_is_passed_by(url):
    # Given a thread of 100 steps, and its snapshots cut short
    with open_store(url) as store:
        counter_loop_graph(store).invoke({"n": 0}, config("long"))
        before = store.thread("long")
        assert before is not None
        table = store.snapshots.recorder.events_table_name  # type: ignore[union-attr]
        tamper = Tamper(url, table)  # (snapshots are no evidence: no triggers keep them)
        key = tamper._id(thread_uuid("long").hex)
        cut = "substr(state, 1, length(state) - 7)"
        tamper.execute(f"UPDATE {tamper.name} SET state = {cut} WHERE originator_id = %s", (key,))
        [[count]] = tamper.execute(
            f"SELECT count(*) FROM {tamper.name} WHERE originator_id = %s", (key,)
        )
        tamper.close()
        assert count >= 2
        [latest] = store.snapshots.recorder.select_events(  # type: ignore[union-attr]
            thread_uuid("long"), desc=True, limit=1
        )
        with pytest.raises(MapperDeserialisationError):
            store.mapper.to_domain_event(latest)

        # When it is read, now and as of a version past a snapshot
        now = store.thread("long")
        then = store.thread_at("long", 75)

    # Then it is folded from its events alone, as before
    assert now is not None
    assert (now.version, now.current_values()) == (before.version, before.current_values())
    assert then is not None
    assert then.thread.version == 75
