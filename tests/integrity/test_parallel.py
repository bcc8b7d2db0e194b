"""Worker processes check ranges of the log; joined, they say what one process says."""

from __future__ import annotations

import pytest

import integrity.verify_log
from domain.record.store import open_store
from integrity.ranges import ScanPlan
from integrity.verify_log import scan_log
from tests.integrity.conftest import record_threads


@pytest.fixture(params=[2, 3], ids=["one-worker", "two-workers"])
def jobs(request) -> int:
    return int(request.param)


@pytest.fixture
def always_parallel(monkeypatch):
    monkeypatch.setattr(integrity.verify_log, "PARALLEL_FROM", 0)


def both(url: str, jobs: int, plan: ScanPlan | None = None):
    with open_store(url) as store:
        return scan_log(store, jobs=1, plan=plan), scan_log(store, jobs=jobs, plan=plan)


def test_workers_find_what_one_process_finds_in_an_untouched_log(recorded, jobs, always_parallel):
    # Given: more threads, so that every range holds threads begun in an earlier one
    url, _ = recorded
    with open_store(url) as store:
        record_threads(store, tuple(f"more-{n}" for n in range(6)))
        head = scan_log(store, jobs=1).verdict.head

    # When
    one, two = both(url, jobs, ScanPlan(leaves_upto=head))

    # Then
    assert two.verdict.ok is True
    assert (two.verdict.events, two.verdict.threads) == (one.verdict.events, one.verdict.threads)
    assert two.leaves == one.leaves


def test_workers_find_what_one_process_finds_in_a_tampered_log(recorded, jobs, always_parallel):
    # Given: one event altered, one deleted, two reordered
    url, tamper = recorded
    tamper.drop_triggers()
    tamper.set_state(tamper.position_of("t1", 3), b'{"not": "the event"}')
    tamper.delete(tamper.position_of("t2", 7))
    tamper.swap_positions(tamper.position_of("t3", 5), tamper.position_of("t3", 6))

    # When
    one, two = both(url, jobs)

    # Then
    assert two.verdict.problems == one.verdict.problems
    assert {p.thread_id for p in two.verdict.problems if p.thread_id} == {"t1", "t2", "t3"}


def test_a_worker_that_fails_stops_the_check_with_its_error(tmp_path):
    # Given: a worker told to read a file that is not there
    from domain.integrity.whole_log import RangeSummary  # noqa: PLC0415
    from integrity.scan import Source  # noqa: PLC0415
    from integrity.verify_log import _Workers  # noqa: PLC0415

    workers = _Workers(
        Source("sqlite", "stored_events", path=str(tmp_path / "none.db")), ScanPlan(), 1
    )

    # When
    with pytest.raises(RuntimeError, match="a verify worker stopped") as raised:
        list(workers.run([(0, 10), (10, 20)], RangeSummary))

    # Then: its own message comes with it
    assert "unable to open database file" in str(raised.value)
