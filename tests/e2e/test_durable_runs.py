"""Runs survive crashes and span server processes: real servers, real SIGKILLs.

Each server is `holdpoint serve` as a subprocess, with a lease of 1 s (renewed
every third of it) and a worker that looks at the store every 0.1 s, on a SQLite
file or a PostgreSQL schema of its own. The graph's `pay` node writes its task id
to a file each time it starts, and hangs while a `hang` file exists: the test
counts how often it ran, and kills a server while it hangs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from domain.record.store import open_store
from tests.api.http_harness import postgres_schema_url
from tests.cli_process import holdpoint
from tests.e2e.test_crash_recovery import (
    REFUND,
    kill,
    make_key,
    paused,
    serving,
    wait_for_file,
)

ROOT = Path(__file__).resolve().parents[2]
GRAPH = """
import pathlib, time
from typing import Any, TypedDict
from domain.config import get_config
from domain.graph import END, START, StateGraph
from domain.types import interrupt

FOLDER = pathlib.Path({folder!r})

class Refund(TypedDict):
    amount: float
    approved: Any
    paid: bool

def review(state: Refund) -> dict:
    return {{"approved": interrupt({{"amount": state["amount"]}})}}

def pay(state: Refund) -> dict:
    task_id = get_config()["metadata"]["holdpoint_task_id"]
    with open(FOLDER / "pay.log", "a") as log:
        log.write(task_id + "\\n")
    (FOLDER / "entered").touch()
    while (FOLDER / "hang").exists():
        time.sleep(0.01)
    return {{"paid": bool(state["approved"])}}

builder = StateGraph(Refund)
builder.add_node("review", review)
builder.add_node("pay", pay)
builder.add_edge(START, "review")
builder.add_edge("review", "pay")
builder.add_edge("pay", END)
"""
CONFIG = """
[server]
run_lease_seconds = 1.0
run_poll_seconds = 0.1
"""
WAIT = 60.0


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request, tmp_path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'holdpoint.db'}"
        return
    with postgres_schema_url() as url:
        yield url


@pytest.fixture
def folder(tmp_path) -> Path:
    (tmp_path / "graph.py").write_text(GRAPH.format(folder=str(tmp_path)))
    (tmp_path / "holdpoint.toml").write_text(CONFIG)
    return tmp_path


@pytest.fixture
def keys(store_url) -> dict[str, str]:
    return {
        "agent": make_key(store_url, "agent-1", "agent"),
        "reviewer": make_key(store_url, "reviewer-1", "reviewer"),
    }


@contextmanager
def server(store_url: str, folder: Path) -> Iterator[tuple[Any, str]]:
    with serving(store_url, folder / "graph.py", "--config", str(folder / "holdpoint.toml")) as (
        process,
        url,
    ):
        yield process, url


def client(url: str, key: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"x-api-key": key}, timeout=WAIT)


def pay_runs(folder: Path) -> list[str]:
    """The task id `pay` was given, each time it started."""
    log = folder / "pay.log"
    return log.read_text().splitlines() if log.exists() else []


def wait_until_paid(http: httpx.Client, thread_id: str) -> dict[str, Any]:
    """The thread's state once its run has ended, polled as a user would."""
    deadline = time.monotonic() + WAIT
    while True:
        state = http.get(f"/threads/{thread_id}/state").json()
        if state["values"].get("paid") is not None and not state["next"]:
            return state
        assert time.monotonic() < deadline, f"thread {thread_id} did not end: {state}"
        time.sleep(0.05)


def decide(url: str, key: str, interrupt_id: str, idempotency_key: str) -> httpx.Response:
    return httpx.post(
        f"{url}/approvals/{interrupt_id}/decision",
        json={"decision": "approve", "reason": "receipt checked"},
        headers={"x-api-key": key, "Idempotency-Key": idempotency_key},
        timeout=WAIT,
    )


def the_run(http: httpx.Client, thread_id: str, run_id: str) -> dict[str, Any]:
    answer = http.get(f"/threads/{thread_id}/runs/{run_id}")
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def verify(store_url: str) -> None:
    checked = holdpoint(store_url, "verify")
    assert checked.returncode == 0, checked.stdout + checked.stderr


def takeovers(store_url: str, thread_id: str) -> list[Any]:
    with open_store(store_url) as store:
        return [e for e in store.thread_events(thread_id) if type(e).__name__ == "RunReclaimed"]


def test_a_decision_whose_node_was_killed_is_taken_over_after_a_restart(store_url, folder, keys):
    # Given a paused refund, approved, whose `pay` node hangs
    with server(store_url, folder) as (process, url):
        with client(url, keys["agent"]) as agent:
            interrupt_id = paused(agent, "t-1")
        (folder / "hang").touch()
        decided = decide(url, keys["reviewer"], interrupt_id, "approve-t-1")
        assert decided.status_code == 200, decided.text
        run_id = decided.json()["run_id"]
        # When the server is killed while `pay` runs
        wait_for_file(folder / "entered")
        kill(process)
    (folder / "hang").unlink()

    # Then after a restart, with no one sending anything, the thread completes
    with server(store_url, folder) as (_process, url), client(url, keys["agent"]) as agent:
        state = wait_until_paid(agent, "t-1")
        run = the_run(agent, "t-1", run_id)
        # And the decision's retry with its Idempotency-Key tells the run's true outcome
        retried = decide(url, keys["reviewer"], interrupt_id, "approve-t-1")
    assert state["values"]["paid"] is True
    runs = pay_runs(folder)
    assert len(runs) == 2, runs  # twice
    assert runs[0] == runs[1]  # with one stable task id
    assert (run["status"], run["attempt"]) == ("success", 2)
    [note] = run["taken_over"]
    assert note["runner"] != note["previous_runner"]
    assert retried.status_code == 200, retried.text
    assert retried.json()["run"] == {"run_id": run_id, "status": "success", "attempt": 2}
    [event] = takeovers(store_url, "t-1")
    assert (event.run_id, event.nodes, event.task_ids) == (run_id, ["pay"], [runs[0]])
    verify(store_url)


def test_a_live_server_takes_over_the_run_of_a_killed_one_and_only_one_does(
    store_url, folder, keys
):
    # Given three servers on one store, and a run whose `pay` hangs on the first
    with ExitStack() as stack:
        (a, url_a), (_b, url_b), _c = (
            stack.enter_context(server(store_url, folder)) for _ in range(3)
        )
        with client(url_a, keys["agent"]) as agent:
            interrupt_id = paused(agent, "t-2")
        (folder / "hang").touch()
        decided = decide(url_a, keys["reviewer"], interrupt_id, "approve-t-2")
        assert decided.status_code == 200, decided.text
        wait_for_file(folder / "entered")
        # When the first is killed, and `pay` may go on
        kill(a)
        (folder / "hang").unlink()
        # Then one of the others takes the run over once the lease has expired, and ends it
        with client(url_b, keys["agent"]) as agent:
            state = wait_until_paid(agent, "t-2")
            run = the_run(agent, "t-2", decided.json()["run_id"])
    assert state["values"]["paid"] is True
    assert len(pay_runs(folder)) == 2  # once more, not twice more
    assert len(takeovers(store_url, "t-2")) == 1
    assert run["attempt"] == 2
    verify(store_url)


def test_a_run_made_on_one_server_is_seen_joined_and_streamed_on_the_others(
    store_url, folder, keys
):
    with ExitStack() as stack:
        urls = [stack.enter_context(server(store_url, folder))[1] for _ in range(3)]
        with client(urls[0], keys["agent"]) as agent:
            agent.post("/threads", json={"thread_id": "t-3", "graph_id": "crash"})
            (folder / "hang").touch()
            # Given a background run made on A, paused at the review; then approved on A
            made = agent.post("/threads/t-3/runs", json={"assistant_id": "crash", "input": REFUND})
            assert made.status_code == 200, made.text
            first = made.json()["run_id"]
        with client(urls[1], keys["agent"]) as on_b, client(urls[2], keys["agent"]) as on_c:
            # When B joins it and C reads it, they see what A ran
            joined = on_b.get(f"/threads/t-3/runs/{first}/join").json()
            assert [i["value"] for i in joined["__interrupt__"]] == [{"amount": 40.0}]
            assert the_run(on_c, "t-3", first)["status"] == "success"
            listed = on_c.get("/threads/t-3/runs").json()
            assert [run["run_id"] for run in listed] == [first]
            interrupt_id = joined["__interrupt__"][0]["id"]
            decided = decide(urls[0], keys["reviewer"], interrupt_id, "approve-t-3")
            second = decided.json()["run_id"]
            wait_for_file(folder / "entered")
            # And C streams the run A is running, to its end
            with on_c.stream("GET", f"/threads/t-3/runs/{second}/stream") as streamed:
                (folder / "hang").unlink()
                events = [line for line in streamed.iter_lines() if line.startswith("data:")]
    finals = [json.loads(line.removeprefix("data:")) for line in events]
    assert finals[-1]["paid"] is True
    assert len(pay_runs(folder)) == 1


def test_a_continue_while_another_server_runs_the_thread_is_refused_or_queued(
    store_url, folder, keys
):
    with ExitStack() as stack:
        (_a, url_a), (_b, url_b) = (
            stack.enter_context(server(store_url, folder)) for _ in range(2)
        )
        with client(url_a, keys["agent"]) as agent:
            interrupt_id = paused(agent, "t-4")
        (folder / "hang").touch()
        decided = decide(url_a, keys["reviewer"], interrupt_id, "approve-t-4")
        running = decided.json()["run_id"]
        wait_for_file(folder / "entered")
        with client(url_b, keys["agent"]) as on_b:
            # When B is asked to continue the thread A is running
            refused = on_b.post(
                "/threads/t-4/runs/wait", json={"assistant_id": "crash", "input": None}
            )
            queued = on_b.post(
                "/threads/t-4/runs",
                json={"assistant_id": "crash", "input": None, "multitask_strategy": "enqueue"},
            )
            assert queued.status_code == 200, queued.text
            assert queued.json()["status"] == "pending"
            (folder / "hang").unlink()
            after = on_b.get(f"/threads/t-4/runs/{queued.json()['run_id']}/join")
    # Then reject is 409 at once, naming the run; enqueue waits, then runs after it
    assert refused.status_code == 409, refused.text
    assert running in refused.json()["detail"]
    assert after.status_code == 200, after.text
    assert after.json()["paid"] is True
    assert len(pay_runs(folder)) == 1  # `pay` ran once


def test_of_30_decisions_spread_over_three_servers_one_wins_and_pay_runs_once(
    store_url, folder, keys
):
    with ExitStack() as stack:
        urls = [stack.enter_context(server(store_url, folder))[1] for _ in range(3)]
        with client(urls[0], keys["agent"]) as agent:
            interrupt_id = paused(agent, "t-5")

        def one(n: int) -> httpx.Response:
            return decide(urls[n % 3], keys["reviewer"], interrupt_id, f"key-{n}")

        with ThreadPoolExecutor(max_workers=30) as pool:
            answers = list(pool.map(one, range(30)))
        with client(urls[1], keys["agent"]) as agent:
            state = wait_until_paid(agent, "t-5")
    assert sorted(a.status_code for a in answers) == [200] + [409] * 29
    assert state["values"]["paid"] is True
    with open_store(store_url) as store:
        names = [type(e).__name__ for e in store.thread_events("t-5")]
    assert names.count("InterruptResumed") == 1
    assert len(pay_runs(folder)) == 1


@contextmanager
def worker(store_url: str, folder: Path) -> Iterator[subprocess.Popen[str]]:
    """`holdpoint worker` on the store, serving the test's graph, until stopped."""
    process = subprocess.Popen(
        [sys.executable, "-m", "api.cli.main", "worker", "--graph",
         f"crash={folder / 'graph.py'}:builder", "--config", str(folder / "holdpoint.toml")],
        cwd=ROOT, env={**os.environ, "HOLDPOINT_STORE": store_url}, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        yield process
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=WAIT)
        assert process.returncode == 0, stderr


def test_a_worker_process_takes_over_the_run_of_a_killed_server(store_url, folder, keys):
    with server(store_url, folder) as (a, url_a), worker(store_url, folder):
        with client(url_a, keys["agent"]) as agent:
            interrupt_id = paused(agent, "t-6")
        (folder / "hang").touch()
        decided = decide(url_a, keys["reviewer"], interrupt_id, "approve-t-6")
        wait_for_file(folder / "entered")
        kill(a)
        (folder / "hang").unlink()
        # With no server left, the worker alone ends the run
        deadline = time.monotonic() + WAIT
        while True:
            with open_store(store_url) as store:
                names = [type(e).__name__ for e in store.thread_events("t-6")]
            if "ThreadCompleted" in names:
                break
            assert time.monotonic() < deadline, names
            time.sleep(0.05)
    assert names.count("RunReclaimed") == 1
    assert len(pay_runs(folder)) == 2
    assert decided.status_code == 200
    verify(store_url)
