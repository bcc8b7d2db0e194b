"""A store that cannot be written: clients get 503 with Retry-After, never a
500 or a hang, nothing is half written, and a retry afterwards succeeds once.

The SQLite file is locked by another process (a `BEGIN EXCLUSIVE` held longer
than the store's busy timeout), or full (its page limit reached).
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psycopg
import pytest
from eventsourcing.persistence import OperationalError

from tests.api.http_harness import running_server
from tests.api.private_postgres import private_postgres
from tests.ci import missing

REFUND = {"refund_amount": 120.0, "approved": None}
HOLD_LOCK = """
import sqlite3, sys
connection = sqlite3.connect(sys.argv[1], isolation_level=None)
connection.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.readline()
connection.rollback()
"""


@contextmanager
def locked_by_another_process(path: Path) -> Iterator[None]:
    """Another process holds the file's write lock until the block ends."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        yield
    finally:
        assert holder.stdin is not None
        holder.stdin.write("release\n")
        holder.stdin.flush()
        holder.wait(timeout=30)


@pytest.fixture
def server(tmp_path):
    with running_server(f"sqlite:///{tmp_path / 'holdpoint.db'}?timeout=1") as server:
        yield server


def paused_thread(server, thread_id: str) -> str:
    with server.http("agent") as agent:
        agent.post("/threads", json={"thread_id": thread_id, "graph_id": "refund"})
        paused = agent.post(
            f"/threads/{thread_id}/runs/wait", json={"assistant_id": "refund", "input": REFUND}
        ).json()
    [pending] = paused["__interrupt__"]
    server.services.read_models.catch_up_to_head()  # the queue knows it before any lock
    return pending["id"]


def decide(server, interrupt_id: str, key: str):
    with server.http("reviewer", headers={"Idempotency-Key": key}) as reviewer:
        return reviewer.post(
            f"/approvals/{interrupt_id}/decision", json={"decision": "approve", "reason": "ok"}
        )


def assert_retry_later(response, cause: str) -> None:
    assert response.status_code == 503, response.text
    assert response.headers["retry-after"] == "2"
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["type"].endswith("/store-unavailable")
    assert body["detail"].startswith(f"The store could not complete the request: {cause}")


def test_a_decision_while_another_process_locks_the_file_gets_503_and_a_retry_succeeds_once(
    server, tmp_path
):
    # Given a paused thread
    interrupt_id = paused_thread(server, "t-locked")
    recorded = server.event_count("t-locked")

    # When a decision comes while another process holds the file's write lock
    with locked_by_another_process(tmp_path / "holdpoint.db"):
        refused = decide(server, interrupt_id, "decision-1")

    # Then it is refused with 503 and Retry-After, and nothing was recorded
    assert_retry_later(refused, "the store is locked by another writer")
    assert server.event_count("t-locked") == recorded

    # And the same decision sent again afterwards is recorded once
    accepted = decide(server, interrupt_id, "decision-1")
    again = decide(server, interrupt_id, "decision-1")
    assert accepted.status_code == 200, accepted.text
    assert {**again.json(), "run": None} == {**accepted.json(), "run": None}  # run may end
    resumed = [
        event
        for event in server.store.thread_events("t-locked")
        if type(event).__name__ == "InterruptResumed"
    ]
    assert len(resumed) == 1


def test_starting_a_run_while_the_file_is_locked_gets_503_and_the_server_stays_up(server, tmp_path):
    with server.http("agent") as agent:
        agent.post("/threads", json={"thread_id": "t-start", "graph_id": "refund"})
        with locked_by_another_process(tmp_path / "holdpoint.db"):
            refused = agent.post(
                "/threads/t-start/runs/wait", json={"assistant_id": "refund", "input": REFUND}
            )
        assert_retry_later(refused, "the store is locked by another writer")
        assert server.event_count("t-start") == 0
        assert agent.get("/healthz").status_code == 200
        retried = agent.post(
            "/threads/t-start/runs/wait", json={"assistant_id": "refund", "input": REFUND}
        )
    assert retried.status_code == 200, retried.text
    assert "__interrupt__" in retried.json()


@contextmanager
def small_disk(folder: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` mounted at `folder` (root only), unmounted afterwards."""
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        missing("the full disk test", f"no small tmpfs: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


def test_a_full_disk_gets_503_keeps_what_was_recorded_and_the_server_stays_up(tmp_path):
    with (
        small_disk(tmp_path / "disk", "2m") as disk,
        running_server(f"sqlite:///{disk / 'holdpoint.db'}?timeout=1") as server,
    ):
        # Given a paused thread
        interrupt_id = paused_thread(server, "t-full")
        recorded = [vars(event) for event in server.store.thread_events("t-full")]

        # When threads are started until the disk is full
        with server.http("agent") as agent:
            answers = []
            while len(answers) < 2_000 and 503 not in {a.status_code for a in answers}:
                big = {**REFUND, "note": "x" * 20_000}
                answers.append(
                    agent.post(
                        f"/threads/f{len(answers)}/runs/wait",
                        json={"assistant_id": "refund", "input": big, "if_not_exists": "create"},
                    )
                )
            health = agent.get("/healthz")

        # Then the disk filled up, requests got 503 (never 500), and nothing was lost
        assert {answer.status_code for answer in answers} <= {200, 503}
        assert_retry_later(answers[-1], "the store's disk is full")
        assert health.status_code == 200
        assert [vars(event) for event in server.store.thread_events("t-full")] == recorded
        assert decide(server, interrupt_id, "after-full").status_code in {200, 503}


def test_postgresql_stopped_and_started_again_503_meanwhile_then_a_retry_succeeds_once():
    with private_postgres() as database, running_server(database.url) as server:
        # Given a paused thread
        interrupt_id = paused_thread(server, "t-outage")
        recorded = server.event_count("t-outage")

        # When the database stops, decisions and runs get 503 with Retry-After, quickly
        database.stop()
        try:
            refused = decide(server, interrupt_id, "outage-1")
            with server.http("agent") as agent:
                started = agent.post(
                    "/threads/t-new/runs/wait",
                    json={"assistant_id": "refund", "input": REFUND, "if_not_exists": "create"},
                )
                health = agent.get("/healthz")
        finally:
            database.start()

        # Then (in seconds: each statement is tried twice, with a 2 s connect timeout)
        assert_retry_later(refused, "the store does not answer")
        assert_retry_later(started, "the store does not answer")
        assert max(refused.elapsed.total_seconds(), started.elapsed.total_seconds()) < 15
        assert health.status_code == 200

        # And once it is back, the same decision is recorded exactly once, and the
        # projector, which waited the outage out, is alive and catches up
        recorded_once_when_sent_again(server, "t-outage", interrupt_id, "outage-1")
        assert server.event_count("t-outage") > recorded


def recorded_once_when_sent_again(server, thread_id: str, interrupt_id: str, key: str) -> None:
    """The decision refused during the fault, sent again with its key: recorded once,
    answered the same the time after; the projector alive and caught up."""
    accepted = decide(server, interrupt_id, key)
    assert accepted.status_code == 200, accepted.text
    again = decide(server, interrupt_id, key).json()
    assert {**again, "run": None} == {**accepted.json(), "run": None}  # the run may have ended
    assert again["run"]["run_id"] == accepted.json()["run"]["run_id"]
    names = [type(event).__name__ for event in server.store.thread_events(thread_id)]
    assert names.count("InterruptResumed") == 1
    server.services.read_models.catch_up_to_head()
    assert server.services.read_models.alive
    assert server.services.read_models.failure is None


def set_read_only(database, on: bool) -> None:
    """The whole cluster read-only (as after a failover to a standby), or writable again."""
    with psycopg.connect(database.url, autocommit=True) as connection:
        connection.execute("SET default_transaction_read_only = off")
        connection.execute(
            f"ALTER SYSTEM SET default_transaction_read_only = {'on' if on else 'off'}"
        )
        connection.execute("SELECT pg_reload_conf()")


def test_a_read_only_postgresql_gets_503_reads_still_answer_and_writes_resume_after():
    with private_postgres() as database, running_server(database.url) as server:
        # Given a paused thread
        interrupt_id = paused_thread(server, "t-read-only")
        recorded = server.event_count("t-read-only")

        # When the database turns read-only under the running server
        set_read_only(database, True)
        try:
            refused = decide(server, interrupt_id, "read-only-1")
            with server.http("agent") as agent:
                started = agent.post(
                    "/threads/t-other/runs/wait",
                    json={"assistant_id": "refund", "input": REFUND, "if_not_exists": "create"},
                )
                thread = agent.get("/threads/t-read-only")
                health = agent.get("/healthz")
        finally:
            set_read_only(database, False)

        # Then writes get 503 naming the cause, reads and health still answer, nothing written
        assert_retry_later(refused, "the store is read-only")
        assert_retry_later(started, "the store is read-only")
        assert thread.status_code == 200
        assert thread.json()["status"] == "interrupted"
        assert health.status_code == 200
        assert server.event_count("t-read-only") == recorded

        # And once it is writable again, the same decision is recorded exactly once
        recorded_once_when_sent_again(server, "t-read-only", interrupt_id, "read-only-1")


OUTAGE_SECONDS = 30.0


def test_postgresql_stopped_for_30_s_under_load_loses_no_cycle_and_strands_no_thread():
    """Four clients run refund cycles; the database stops for 30 s and starts again. Every
    cycle a client saw confirmed is in the store once, and once it is back every thread
    ends or pauses: the runs the outage cut short are taken over, with no one's help."""
    with (
        private_postgres() as database,
        running_server(database.url, run_lease_seconds=1.0, run_poll_seconds=0.1) as server,
    ):
        confirmed: list[str] = []
        started: list[str] = []
        stop = threading.Event()

        def cycles(number: int) -> None:
            for cycle in range(10_000):
                if stop.is_set():
                    return
                thread_id = f"t-{number}-{cycle}"
                started.append(thread_id)
                try:
                    interrupt_id = paused_thread(server, thread_id)
                    answer = decide(server, interrupt_id, f"key-{thread_id}")
                except (
                    httpx.HTTPError,
                    KeyError,
                    ValueError,
                    OperationalError,
                    psycopg.OperationalError,  # the test's own catch-up of the read models
                ):
                    continue  # refused in the outage: a 503, no interrupt yet, or no store
                if answer.status_code == 200:
                    confirmed.append(thread_id)

        clients = [threading.Thread(target=cycles, args=(n,)) for n in range(4)]
        for client in clients:
            client.start()
        try:
            wait_until(lambda: len(confirmed) >= 8, "cycles before the outage")
            # When the database stops for 30 s under load, then starts again
            database.stop()
            stop_at = time.monotonic() + OUTAGE_SECONDS
            while time.monotonic() < stop_at:
                stop.wait(0.5)
            database.start()
            before = len(confirmed)
            wait_until(lambda: len(confirmed) >= before + 4, "cycles after the outage")
        finally:
            stop.set()
            for client in clients:
                client.join(timeout=120)

        # Then no run is left running, no thread busy, no confirmed decision lost or doubled
        runs = server.services.runs.store
        wait_until(
            lambda: all(run.done for t in started for run in runs.of_thread(t, limit=100)),
            "every run to end",
        )
        for thread_id in started:
            thread = server.store.thread(thread_id)
            if thread is None:
                continue  # its first run was refused in the outage: nothing recorded
            assert thread.status in ("idle", "interrupted"), (thread_id, thread.status)
            names = [type(event).__name__ for event in server.store.thread_events(thread_id)]
            assert names.count("InterruptResumed") <= 1, thread_id
            if thread_id in confirmed:
                assert names.count("InterruptResumed") == 1, thread_id
                assert names[-1] == "ThreadCompleted", (thread_id, names)


def wait_until(condition, what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
