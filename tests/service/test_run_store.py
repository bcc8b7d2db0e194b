"""The runs table and the thread leases, on each store kind: given rows, when a claim,
then who holds the thread."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from domain.record.application import Workflows
from domain.record.store import open_store
from projections import database
from projections.database import PostgresDatabase, database_for
from service.run_store import PENDING, RUNNING, RunStore, StoredRun
from tests.service.leases import expire

TTL = 60.0


@pytest.fixture
def runs(store: Workflows) -> Iterator[RunStore]:
    made = RunStore(database_for(store))
    yield made
    made.close()


def a_run(run_id: str, thread_id: str = "t-1") -> StoredRun:
    return StoredRun(run_id, thread_id, "refund", "refund-assistant", request={"input": None})


def test_a_run_on_a_free_thread_starts_and_holds_it(runs):
    opened = runs.open(a_run("r-1"), "runner-a", TTL, enqueue=False)

    assert opened.started
    assert not opened.queued
    assert runs.holder("t-1") == "r-1"
    stored = runs.get("r-1")
    assert stored is not None
    assert (stored.status, stored.owner, stored.attempt) == (RUNNING, "runner-a", 1)


def test_a_second_run_is_refused_naming_the_first_and_recorded_nowhere(runs):
    runs.open(a_run("r-1"), "runner-a", TTL, enqueue=False)

    opened = runs.open(a_run("r-2"), "runner-b", TTL, enqueue=False)

    assert (opened.started, opened.queued, opened.holder) == (False, False, "r-1")
    assert runs.get("r-2") is None


def test_an_enqueued_run_waits_then_is_claimed_once_the_thread_is_free(runs):
    runs.open(a_run("r-1"), "runner-a", TTL, enqueue=False)
    assert runs.open(a_run("r-2"), "runner-b", TTL, enqueue=True).queued
    assert runs.claim_next("runner-b", TTL, ["refund"]) is None  # the thread is busy

    assert runs.finish("r-1", "t-1", "runner-a", "success", {"paid": True}, 7)
    claimed = runs.claim_next("runner-b", TTL, ["refund"])

    assert claimed is not None
    assert claimed.run_id == "r-2"
    assert (claimed.status, claimed.owner) == (RUNNING, "runner-b")
    assert runs.holder("t-1") == "r-2"
    assert runs.claim_next("runner-c", TTL, ["refund"]) is None


def test_a_threads_queued_runs_leave_in_the_order_they_came(runs):
    runs.open(a_run("r-1"), "runner-a", TTL, enqueue=False)
    for run_id in ("r-3", "r-2"):  # ids out of order: the time of arrival counts
        assert runs.open(a_run(run_id), "runner-a", TTL, enqueue=True).queued
    # A run that arrives while others wait goes behind them, even with the thread free
    runs.finish("r-1", "t-1", "runner-a", "success", {}, None)
    assert runs.open(a_run("r-4"), "runner-a", TTL, enqueue=True).queued

    order = []
    while (claimed := runs.claim_next("runner-a", TTL, ["refund"])) is not None:
        order.append(claimed.run_id)
        runs.finish(claimed.run_id, "t-1", "runner-a", "success", {}, None)

    assert order == ["r-3", "r-2", "r-4"]


def test_a_queued_run_of_a_graph_not_served_here_is_left_to_another_process(runs):
    runs.open(a_run("r-0"), "runner-a", TTL, enqueue=False)
    assert runs.open(a_run("r-1"), "runner-a", TTL, enqueue=True).queued
    runs.finish("r-0", "t-1", "runner-a", "success", {}, None)

    assert runs.claim_next("runner-a", TTL, ["another-graph"]) is None
    assert runs.get("r-1").status == PENDING


def test_an_expired_lease_is_taken_over_once_and_noted(runs):
    runs.open(a_run("r-1"), "runner-a", TTL, enqueue=False)
    expire(runs, "t-1")

    [expired] = runs.expired(["refund"])
    first = runs.take_over(expired, "runner-b", TTL)
    second = runs.take_over(expired, "runner-c", TTL)

    assert first is not None
    assert second is None
    assert (first.owner, first.attempt) == ("runner-b", 2)
    [note] = first.takeovers
    assert (note["runner"], note["previous_runner"]) == ("runner-b", "runner-a")
    assert runs.expired(["refund"]) == []
    assert runs.get("r-1").takeovers == first.takeovers


def test_an_expired_lease_of_a_running_run_is_not_taken_by_a_new_run(runs):
    """The run's unfinished nodes go first: a takeover runs them, a new run waits."""
    runs.open(a_run("r-1"), "runner-a", TTL, enqueue=False)
    expire(runs, "t-1")

    opened = runs.open(a_run("r-2"), "runner-b", TTL, enqueue=False)

    assert not opened.started
    assert opened.holder == "r-1"


def test_a_runner_that_lost_its_lease_records_no_end_and_learns_it_on_renewal(runs):
    runs.open(a_run("r-1"), "runner-a", TTL, enqueue=False)
    expire(runs, "t-1")
    [expired] = runs.expired(["refund"])
    runs.take_over(expired, "runner-b", TTL)

    assert runs.renew("runner-a", ["r-1"], TTL) == set()
    assert not runs.finish("r-1", "t-1", "runner-a", "success", {"late": True}, None)
    assert runs.get("r-1").status == RUNNING
    assert runs.renew("runner-b", ["r-1"], TTL) == {"r-1"}


def test_a_refused_run_is_forgotten_and_frees_its_thread(runs):
    runs.open(a_run("r-1"), "runner-a", TTL, enqueue=False)

    runs.discard("r-1", "t-1", "runner-a")

    assert runs.get("r-1") is None
    assert runs.holder("t-1") is None
    assert runs.open(a_run("r-2"), "runner-b", TTL, enqueue=False).started


def test_an_edit_holds_a_thread_as_a_run_does_and_lets_it_go(runs):
    assert runs.hold("t-1", "edit:1", "runner-a", TTL)

    assert not runs.open(a_run("r-1"), "runner-b", TTL, enqueue=False).started
    assert not runs.hold("t-1", "edit:2", "runner-b", TTL)
    runs.let_go("t-1", "edit:1", "runner-a")
    assert runs.open(a_run("r-1"), "runner-b", TTL, enqueue=False).started
    assert not runs.hold("t-1", "edit:2", "runner-b", TTL)  # and an edit waits for a run


def test_an_edits_lease_left_behind_expires_and_a_run_takes_the_thread(runs):
    assert runs.hold("t-1", "edit:1", "runner-a", TTL)  # its process dies holding it
    expire(runs, "t-1")

    assert runs.expired(["refund"]) == []  # nothing to take over: no run was running
    assert runs.open(a_run("r-1"), "runner-b", TTL, enqueue=False).started
    assert runs.holder("t-1") == "r-1"


def test_a_threads_runs_are_listed_newest_first_and_by_status(runs):
    runs.open(a_run("r-1"), "runner-a", TTL, enqueue=False)
    runs.finish("r-1", "t-1", "runner-a", "error", {"__error__": {}}, None)
    runs.open(a_run("r-2"), "runner-a", TTL, enqueue=False)

    assert [r.run_id for r in runs.of_thread("t-1", limit=10)] == ["r-2", "r-1"]
    assert [r.run_id for r in runs.of_thread("t-1", limit=10, status="error")] == ["r-1"]
    assert [r.run_id for r in runs.of_thread("t-1", limit=1, offset=1)] == ["r-1"]


def test_a_postgres_connection_idle_past_its_ping_still_commits(postgres_url, monkeypatch):
    """The ping before reusing an idle connection must not leave a transaction open:
    every transaction() after it would be a savepoint, never committed, its locks held."""
    with open_store(postgres_url) as store:
        db = database_for(store)
        assert isinstance(db, PostgresDatabase)
        runs = RunStore(db)
        try:
            runs.open(a_run("r-1"), "runner-a", TTL, enqueue=True)  # queued: a transaction
            monkeypatch.setattr(database, "IDLE_PING_SECONDS", 0.0)  # every reuse pings first

            runs.discard("r-1", "t-1", "runner-a")  # a transaction on the pinged connection

            with psycopg.connect(postgres_url.split("?")[0]) as other:
                schema = store.env.get("POSTGRES_SCHEMA")
                rows = other.execute(
                    f'SELECT status FROM "{schema}".holdpoint_runs WHERE run_id = %s', ("r-1",)
                ).fetchall()
            assert rows == []
        finally:
            runs.close()
