"""Two processes write the same thread at the same moment: one wins, one is refused.

Real parallel processes ("spawn"), each with its own store opened from the URL,
on SQLite (a file) and PostgreSQL (a schema of its own). Two long-lived workers
(`race_workers.serve`) race once per round, each round on a new thread:

- resume race: both answer the same pending interrupt, with different values
  and as different reviewers. Exactly one resume is recorded, the winner's,
  and the node behind the interrupt runs once: the runtime commits the
  InterruptResumed before it runs any node code.
- step race: both continue a thread whose next node is pending. Exactly one
  commits the step.

A "gated" round makes both runs read the thread before either commits (see
`race_workers`), so the loser must get ConcurrentUpdateError. A "free" round
only starts them together: the loser may come late and find the thread
already resumed (NotInterruptedError) or already finished (nothing to do);
whichever way it goes, the record is that of one run.

On PostgreSQL the workers open the store with `create_tables=no`, as runtime
processes do once the tables exist: opening a store that creates its tables
from several processes at once is a separate matter
(`test_several_processes_can_open_one_postgres_store_at_once`).
"""

from __future__ import annotations

import multiprocessing
import queue
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import psycopg
import pytest
from psycopg import sql

from domain.errors import GraphRecursionError
from domain.record.application import Workflows
from domain.record.chain import verify_chain
from domain.record.store import open_store
from domain.types import Command
from tests.persistence import race_workers

ROUNDS = {"gated": 15, "free": 10}
REPORT_TIMEOUT = 60.0
AGENT = {"id": "agent-1", "role": "agent"}
SPAWN = multiprocessing.get_context("spawn")


@pytest.fixture(params=["sqlite", "postgres"])
def store_urls(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    """(the URL the test opens, the URL the workers open)."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'holdpoint.db'}"
        return url, url
    url = str(request.getfixturevalue("postgres_url"))
    return url, f"{url}&create_tables=no"


class Workers:
    """Two worker processes, fed round by round; each round has fresh barriers."""

    names = ("A", "B")

    def __init__(self, rounds: int) -> None:
        self.barriers = [(SPAWN.Barrier(2), SPAWN.Barrier(2)) for _ in range(rounds)]
        self.outbox: Any = SPAWN.Queue()
        self.inboxes: dict[str, Any] = {name: SPAWN.Queue() for name in self.names}
        self.processes = [
            SPAWN.Process(
                target=race_workers.serve,
                args=(name, self.barriers, self.inboxes[name], self.outbox),
                name=f"race-worker-{name}",
                daemon=True,
            )
            for name in self.names
        ]
        for process in self.processes:
            process.start()

    def race(self, **job: Any) -> dict[str, dict[str, Any]]:
        """Send both workers the same job; their reports, by worker name."""
        for inbox in self.inboxes.values():
            inbox.put(job)
        reports = {}
        for _ in self.names:
            try:
                report = self.outbox.get(timeout=REPORT_TIMEOUT)
            except queue.Empty:
                alive = {p.name: p.exitcode for p in self.processes}
                pytest.fail(f"round {job['round']}: a worker did not report ({alive})")
            assert report["round"] == job["round"]
            reports[report["worker"]] = report
        for report in reports.values():
            assert report["outcome"] != "crash", report["message"]
        return reports

    def close(self) -> None:
        for inbox in self.inboxes.values():
            inbox.put(None)
        for process in self.processes:
            process.join(timeout=30)
            if process.is_alive():  # only ever our own worker, by its handle
                process.terminate()
                process.join()


@contextmanager
def workers(rounds: int) -> Iterator[Workers]:
    started = Workers(rounds)
    try:
        yield started
    finally:
        started.close()


def winner_and_loser(reports: dict[str, dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    succeeded = [name for name, report in reports.items() if report["outcome"] == "ok"]
    assert len(succeeded) >= 1, f"no worker succeeded: {reports}"
    if len(succeeded) == 2:  # a late loser found nothing left to do (free step race)
        return "", {}
    (winner,) = succeeded
    (loser,) = (report for name, report in reports.items() if name != winner)
    return winner, loser


def kinds(events: list[Any]) -> list[str]:
    return [type(event).__name__ for event in events]


# -- the resume race --------------------------------------------------------


def paused_refund(store: Workflows, thread_id: str, log: Path) -> None:
    graph = race_workers.refund_graph(store)
    config = race_workers.config_for(thread_id, AGENT)
    result = graph.invoke({"amount": 250.0, "log": str(log)}, config)
    assert "__interrupt__" in result


def one_resumer_reference(store: Workflows, tmp_path: Path) -> list[str]:
    """The events of a refund thread resumed once, by one reviewer."""
    thread_id = f"reference-{uuid.uuid4().hex[:8]}"
    paused_refund(store, thread_id, tmp_path / "reference.log")
    graph = race_workers.refund_graph(store)
    config = race_workers.config_for(thread_id, race_workers.worker_actor("ref"))
    graph.invoke(Command(resume=race_workers.resume_value("ref")), config)
    return kinds(store.thread_events(thread_id))


@pytest.mark.parametrize("mode", ["gated", "free"])
def test_of_two_processes_resuming_one_interrupt_exactly_one_is_recorded(
    store_urls, tmp_path, mode
):
    url, worker_url = store_urls
    rounds = ROUNDS[mode]
    with open_store(url) as store, workers(rounds) as pool:
        reference = one_resumer_reference(store, tmp_path)
        assert reference.count("InterruptResumed") == 1
        for round_no in range(rounds):
            # Given a refund thread paused at its approval
            thread_id = f"resume-{mode}-{round_no}-{uuid.uuid4().hex[:8]}"
            log = tmp_path / f"{thread_id}.log"
            paused_refund(store, thread_id, log)

            # When two reviewers, in two processes, resume it at the same moment
            reports = pool.race(
                race="resume",
                round=round_no,
                url=worker_url,
                thread_id=thread_id,
                gated=mode == "gated",
            )

            # Then exactly one succeeds, and the other is refused, having written nothing
            winner, loser = winner_and_loser(reports)
            assert winner, f"round {round_no}: both resumes succeeded: {reports}"
            allowed = {"ConcurrentUpdateError"}
            if mode == "free":  # it may also come after the winner's resume was committed
                allowed.add("NotInterruptedError")
            assert loser["error"] in allowed, f"round {round_no}: {loser}"
            won = race_workers.resume_value(winner)
            assert reports[winner]["result"]["decision"] == won

            # And the record is one resume run: the winner's answer, by the winner
            events = store.thread_events(thread_id)
            assert kinds(events) == reference, f"round {round_no}"
            (resumed,) = (e for e in events if type(e).__name__ == "InterruptResumed")
            assert resumed.resume == won
            assert resumed.actor["id"] == race_workers.worker_actor(winner)["id"]
            report = verify_chain(events, thread_id)
            assert report.ok, report.problem
            state = race_workers.refund_graph(store).get_state(
                race_workers.config_for(thread_id, AGENT)
            )
            assert state.next == ()
            assert state.values["outcome"] == f"refund of $250.0 settled: {won}"

            # And the node behind the interrupt ran once after it returned
            assert log.read_text(encoding="utf-8").splitlines() == [
                f"review ran after the interrupt returned {won!r}"
            ]


# -- the step race ----------------------------------------------------------


def stopped_before_finish(store: Workflows, thread_id: str, log: Path) -> None:
    """A thread whose next node, `finish`, is pending (stopped by recursion_limit)."""
    graph = race_workers.step_graph(store)
    config = race_workers.config_for(thread_id, AGENT, recursion_limit=1)
    with pytest.raises(GraphRecursionError):
        graph.invoke({"log": str(log)}, config)
    assert graph.get_state(config).next == ("finish",)


def one_stepper_reference(store: Workflows, tmp_path: Path) -> list[str]:
    thread_id = f"reference-{uuid.uuid4().hex[:8]}"
    stopped_before_finish(store, thread_id, tmp_path / "reference.log")
    graph = race_workers.step_graph(store)
    graph.invoke(None, race_workers.config_for(thread_id, AGENT, recursion_limit=50))
    return kinds(store.thread_events(thread_id))


@pytest.mark.parametrize("mode", ["gated", "free"])
def test_of_two_processes_stepping_one_thread_exactly_one_commits_the_step(
    store_urls, tmp_path, mode
):
    url, worker_url = store_urls
    rounds = ROUNDS[mode]
    with open_store(url) as store, workers(rounds) as pool:
        reference = one_stepper_reference(store, tmp_path)
        for round_no in range(rounds):
            # Given a thread whose next node is pending
            thread_id = f"step-{mode}-{round_no}-{uuid.uuid4().hex[:8]}"
            log = tmp_path / f"{thread_id}.log"
            stopped_before_finish(store, thread_id, log)
            before = len(store.thread_events(thread_id))

            # When two processes continue it at the same moment
            reports = pool.race(
                race="step",
                round=round_no,
                url=worker_url,
                thread_id=thread_id,
                gated=mode == "gated",
            )

            # Then one commits the step, and the other is refused, having written nothing
            winner, loser = winner_and_loser(reports)
            if mode == "gated":
                assert winner, f"round {round_no}: both steps succeeded: {reports}"
            if winner:
                assert loser["error"] == "ConcurrentUpdateError", f"round {round_no}: {loser}"
            events = store.thread_events(thread_id)
            assert kinds(events) == reference, f"round {round_no}"
            step_events = events[before:]
            assert kinds(step_events) == ["NodeCompleted", "ThreadCompleted"]
            finished_by = step_events[0].update["finished_by"]
            assert finished_by == winner if winner else finished_by in Workers.names
            report = verify_chain(events, thread_id)
            assert report.ok, report.problem

            # And node code may have run in both (at least once), but was recorded once
            runs = log.read_text(encoding="utf-8").splitlines()
            if mode == "gated":
                assert runs == ["finish ran", "finish ran"]
            else:
                assert runs in (["finish ran"], ["finish ran", "finish ran"])


# -- opening one store from several processes -------------------------------


def test_several_processes_can_open_one_postgres_store_at_once(postgres_url):
    """Replicated API processes start together, each opening (and migrating) the store."""
    base, _, query = postgres_url.partition("?")
    schema = dict(parse_qsl(query))["schema"]
    rounds, opened = 5, 4
    schemas = [f"{schema}_{round_no}" for round_no in range(rounds)]  # a fresh one a round
    urls = [f"{base}?schema={name}" for name in schemas]
    barriers = [SPAWN.Barrier(opened) for _ in urls]
    outbox: Any = SPAWN.Queue()
    processes = [
        SPAWN.Process(target=race_workers.open_at_once, args=(urls, barriers, outbox), daemon=True)
        for _ in range(opened)
    ]
    for process in processes:
        process.start()
    try:
        results = [outbox.get(timeout=REPORT_TIMEOUT) for _ in range(rounds * opened)]
    finally:
        for process in processes:
            process.join(timeout=30)
            if process.is_alive():
                process.terminate()
        with psycopg.connect(base, autocommit=True) as connection:
            for name in schemas:
                connection.execute(
                    sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name))
                )
    failures = [result for result in results if result != "ok"]
    assert not failures, f"{len(failures)} of {len(results)} opens failed; first: {failures[0]}"
