"""The commands on a damaged store: one line about the damage, never a traceback.

Given a real store holding every kind of event (`tests/damaged_store.py`), thread
`answered`'s event at version 3 cut short with raw SQL, when `holdpoint` runs on it
as a user runs it (a subprocess): a rebuild of the read models quarantines the
event with one line and completes (exit 0); `holdpoint verify` names it and fails
(exit 1); the commands that read the thread say in one line that it cannot be read
(exit 2); `holdpoint projector` and `holdpoint serve` go on, the server answering
every other thread and the readiness probe naming the event.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from domain.record.store import open_store
from projections.catalog import runner_for
from projections.quarantine import Quarantine
from tests.api.http_harness import postgres_schema_url
from tests.cli_process import REPO, holdpoint
from tests.damaged_store import Damage, record_every_kind
from tests.projections.histories import positions
from tests.serving import Serving

DAMAGED = "answered"
VERSION = 3


def damaged_store(url: str) -> int:
    """Record every kind of event at `url`, then cut `answered`'s version 3 short; its
    position."""
    with open_store(url) as store:
        record_every_kind(store)
        damage = Damage(url, store)
        [row] = [r for r in damage.tamper.thread_rows(DAMAGED) if r[2] == VERSION]
        damage.cut_short(row)
        damage.close()
    return row[0]


@pytest.fixture(scope="module")
def sqlite_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, int]:
    url = f"sqlite:///{tmp_path_factory.mktemp('damaged') / 'holdpoint.db'}"
    return url, damaged_store(url)


def assert_no_traceback(done: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in done.stdout + done.stderr


def test_a_rebuild_quarantines_the_event_in_one_line_and_completes(sqlite_store):
    url, position = sqlite_store

    rebuilt = holdpoint(url, "projections", "rebuild")

    assert rebuilt.returncode == 0, rebuilt.stderr
    assert_no_traceback(rebuilt)
    [line] = [line for line in rebuilt.stderr.splitlines() if "quarantined" in line]
    assert line.startswith(
        f"holdpoint: quarantined the event at position {position} (thread {DAMAGED!r}, "
        f"version {VERSION}, NodeCompleted): its stored state is not JSON"
    )
    assert line.endswith("; run `holdpoint verify`")
    assert rebuilt.stdout.strip().endswith("1 event(s) quarantined, as they cannot be decoded")
    status = holdpoint(url, "projections", "status")
    assert "1 event(s) quarantined" in status.stdout


def test_verify_names_the_event_and_fails(sqlite_store):
    url, position = sqlite_store

    verified = holdpoint(url, "verify")

    assert verified.returncode == 1
    assert_no_traceback(verified)
    assert (
        f"  thread {DAMAGED!r}, version {VERSION}, position {position}: unreadable: "
        f"version {VERSION} (NodeCompleted) cannot be decoded: its stored state is not JSON"
    ) in verified.stdout.splitlines()


@pytest.mark.parametrize(
    "command",
    [("history", DAMAGED), ("state", DAMAGED), ("replay", DAMAGED)],
    ids=lambda command: command[0],
)
def test_a_command_that_reads_the_thread_says_in_one_line_it_cannot(sqlite_store, command):
    url, _ = sqlite_store

    refused = holdpoint(url, *command)

    assert refused.returncode == 2
    assert_no_traceback(refused)
    [line] = refused.stderr.strip().splitlines()
    assert line.startswith(
        f"holdpoint: error: Thread {DAMAGED!r} cannot be read: its event at version {VERSION} "
        "(NodeCompleted) cannot be decoded: "
    )
    assert line.endswith("run `holdpoint verify` to see what is wrong")


def test_threads_show_shows_the_index_row_and_says_the_thread_is_damaged(sqlite_store):
    url, _ = sqlite_store

    shown = holdpoint(url, "threads", "show", DAMAGED)

    assert shown.returncode == 0, shown.stderr
    [damaged] = [line for line in shown.stdout.splitlines() if line.startswith("damaged")]
    assert damaged.startswith(
        f"damaged          its event at version {VERSION} (NodeCompleted) cannot be decoded"
    )


# -- the long-running processes ---------------------------------------------------


def lines_of(stream: object) -> queue.Queue[str]:
    """The stream's lines, read by a thread of their own as they come."""
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in stream:  # type: ignore[attr-defined]
            lines.put(line.rstrip("\n"))
        lines.put("")

    threading.Thread(target=read, daemon=True).start()
    return lines


@pytest.fixture
def postgres_store() -> Iterator[tuple[str, int]]:
    with postgres_schema_url() as url:
        yield url, damaged_store(url)


def test_the_projector_process_quarantines_the_event_and_keeps_running(postgres_store):
    url, position = postgres_store
    projector = subprocess.Popen(
        [sys.executable, "-m", "api.cli.main", "projector", "--poll", "0.05"],
        cwd=REPO,
        env={**os.environ, "HOLDPOINT_STORE": url},
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    try:
        # When it meets the damaged event, it says so in one line (after its batch commits)
        said = lines_of(projector.stderr)
        line = said.get(timeout=60)
        while "quarantined" not in line:
            assert line, "the projector ended before quarantining the event"
            line = said.get(timeout=60)
        assert line.startswith(f"holdpoint: quarantined the event at position {position} ")

        # Then it is still running, and every read model is at the head
        assert projector.poll() is None
        with open_store(url) as store:
            runner = runner_for(store)
            assert set(positions(runner.db).values()) == {runner.head()}
            assert [e.position for e in Quarantine(runner.db).events()] == [position]
            runner.close()
    finally:
        projector.send_signal(signal.SIGTERM)
        projector.wait(timeout=60)
    assert projector.returncode == 0


def test_a_served_store_is_degraded_and_serves_every_other_thread(sqlite_store):
    url, position = sqlite_store
    keys = {
        role: holdpoint(url, "keys", "create", "--principal", role, "--role", role)
        .stdout.strip()
        .splitlines()[-1]
        for role in ("agent", "reviewer", "auditor")
    }
    server = Serving(url, cwd=Path(REPO))
    [docs] = [line for line in server.banner("  API docs:") if "API docs:" in line]
    base = docs.split()[-1].removesuffix("/docs")
    try:
        with httpx.Client(base_url=base, timeout=60) as http:

            def call(who: str, method: str, path: str, body: object = None) -> httpx.Response:
                return http.request(method, path, json=body, headers={"x-api-key": keys[who]})

            # Given the read models caught up (a search waits for them)
            assert call("auditor", "POST", "/threads/search", {}).status_code == 200

            # Then the server is ready but degraded, naming the event
            ready = http.get("/readyz").json()
            assert ready["status"] == "degraded"
            assert [(q["position"], q["thread_id"]) for q in ready["quarantined"]] == [
                (position, DAMAGED)
            ]
            # And the damaged thread is a 409, while a new refund is run and decided
            assert call("auditor", "GET", f"/threads/{DAMAGED}").status_code == 409
            thread_id = call("agent", "POST", "/threads", {}).json()["thread_id"]
            body = {"assistant_id": "refund", "input": {"refund_amount": 250}}
            asked = call("agent", "POST", f"/threads/{thread_id}/runs/wait", body).json()
            interrupt_id = asked["__interrupt__"][0]["id"]
            decided = call(
                "reviewer", "POST", f"/approvals/{interrupt_id}/decision", {"decision": "approve"}
            )
            assert decided.status_code == 200, decided.text
    finally:
        code, stderr = server.stop()
    assert code == 0, stderr
    assert "Traceback" not in stderr
