"""`holdpoint demo`, run for real: a subprocess on a temporary SQLite store."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from domain.record.chain import verify_chain
from domain.record.store import open_store

REPO = Path(__file__).resolve().parents[3]
THREAD = re.compile(r"thread (refund-[0-9a-f]{8})")


def holdpoint(store_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOLDPOINT_STORE": store_url}
    return subprocess.run(
        [sys.executable, "-m", "api.cli.main", "demo", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def store_file(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'demo.db'}"


def test_demo_pauses_resumes_and_verifies_the_chain(store_file):
    done = holdpoint(store_file)

    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "Question: Approve a $250.0 refund?" in out
    assert re.search(r"Pending interrupt [0-9a-f]{32} at node 'check_and_process'", out)
    assert "Reviewer 'demo-reviewer' (reviewer) decides: approve." in out
    assert "Outcome: Refund of $250.0 processed." in out
    assert "Chain verified: 7 events, unbroken" in out
    for event in ("ThreadStarted", "InterruptRaised", "InterruptResumed", "ThreadCompleted"):
        assert event in out


def test_demo_records_the_reviewers_decision_in_the_store(store_file):
    done = holdpoint(store_file)
    assert done.returncode == 0, done.stderr
    thread_id = THREAD.search(done.stdout).group(1)

    with open_store(store_file) as store:
        events = store.thread_events(thread_id)

    resumed = [e for e in events if type(e).__name__ == "InterruptResumed"]
    assert [(e.decision, e.resume, e.actor["id"], e.actor["role"]) for e in resumed] == [
        ("approve", True, "demo-reviewer", "reviewer")
    ]
    assert resumed[0].reason
    assert verify_chain(events, thread_id).ok


def test_two_runs_on_one_store_make_two_threads_that_both_verify(store_file):
    first = holdpoint(store_file)
    second = holdpoint(store_file)

    assert first.returncode == 0, first.stderr
    assert second.returncode == 0, second.stderr
    threads = [THREAD.search(run.stdout).group(1) for run in (first, second)]
    assert threads[0] != threads[1]
    with open_store(store_file) as store:
        for thread_id in threads:
            report = verify_chain(store.thread_events(thread_id), thread_id)
            assert report.ok, report
            assert report.events_checked == 7


def test_reject_shows_the_denial(store_file):
    done = holdpoint(store_file, "--decision", "reject")

    assert done.returncode == 0, done.stderr
    assert "decides: reject." in done.stdout
    assert "Outcome: Refund denied by reviewer." in done.stdout
    assert "Chain verified" in done.stdout


def test_small_refund_needs_no_approval(store_file):
    done = holdpoint(store_file, "--amount", "50")

    assert done.returncode == 0, done.stderr
    assert "No approval needed" in done.stdout
    assert "Question:" not in done.stdout
    assert "Outcome: Refund of $50.0 processed." in done.stdout
    assert "Chain verified: 5 events, unbroken" in done.stdout


@pytest.mark.parametrize("url", ["bogus://nowhere", "sqlite://"])
def test_bad_store_url_exits_2_with_one_line_and_no_traceback(url):
    done = holdpoint(url)

    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("holdpoint: error: ")
    assert url in lines[0]
    assert "Traceback" not in done.stderr
