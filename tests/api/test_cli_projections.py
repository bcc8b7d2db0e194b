"""`holdpoint projections status|rebuild` and `holdpoint threads list`, run for real.

Each command runs as a subprocess on a SQLite file (the embedded default)
that the test has recorded events into; no projector runs beside it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from domain.store import open_store
from projections.catalog import runner_for
from tests.projections.histories import REVIEWER, record_history

REPO = Path(__file__).resolve().parents[2]


def holdpoint(store_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "api.cli", *args],
        cwd=REPO,
        env={**os.environ, "HOLDPOINT_STORE": store_url},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def store(sqlite_url):
    with open_store(sqlite_url) as store:
        record_history(store)
        yield store


@pytest.fixture
def runner(store):
    runner = runner_for(store)
    yield runner
    runner.close()


def table(stdout: str) -> dict[str, tuple[int, int, int]]:
    """`projections status` as {name: (position, head, lag)}."""
    header, *lines = stdout.strip().splitlines()
    assert header.split() == ["projection", "position", "head", "lag"]
    return {name: (int(p), int(h), int(lag)) for name, p, h, lag in map(str.split, lines)}


def test_projections_status_shows_each_read_models_position_head_and_lag(sqlite_url, store, runner):
    # Given read models caught up, then one more event (a cancellation)
    runner.catch_up()
    head = store.cancel("pending", REVIEWER, "no longer needed")

    # When
    done = holdpoint(sqlite_url, "projections", "status")

    # Then
    assert done.returncode == 0, done.stderr
    assert table(done.stdout) == dict.fromkeys(runner.projections, (head - 1, head, 1))


def test_projections_rebuild_shows_progress_on_stderr_and_what_it_did_on_stdout(
    sqlite_url, store, runner
):
    # Given read models never brought up to date
    head = runner.head()

    # When
    done = holdpoint(sqlite_url, "projections", "rebuild")

    # Then
    assert done.returncode == 0, done.stderr
    names = list(runner.projections)
    assert done.stdout == f"Rebuilt {', '.join(names)}: {head} events applied\n"
    for name in names:
        assert name in done.stderr
    assert done.stderr.count(f"{head:,}/{head:,} 100%") == len(names)
    assert all(status.lag == 0 for status in runner.status())


def test_projections_rebuild_of_one_read_model_names_it(sqlite_url, store, runner):
    runner.catch_up()

    done = holdpoint(sqlite_url, "projections", "rebuild", "thread_index")

    assert done.returncode == 0, done.stderr
    assert done.stdout == f"Rebuilt thread_index: {runner.head()} events applied\n"


def test_projections_rebuild_of_an_unknown_read_model_exits_2_with_a_one_line_error(
    sqlite_url, store, runner
):
    done = holdpoint(sqlite_url, "projections", "rebuild", "nope")

    assert done.returncode == 2
    assert done.stdout == ""
    [line] = done.stderr.strip().splitlines()
    assert line == (
        f"holdpoint: error: Unknown projection 'nope': use one of {', '.join(runner.projections)}"
    )


def test_threads_list_with_a_status_lists_the_threads_in_that_status(sqlite_url, store):
    # Given (record_history) two idle threads among others, and no projector

    # When
    done = holdpoint(sqlite_url, "threads", "list", "--status", "idle")

    # Then
    assert done.returncode == 0, done.stderr
    header, *lines, summary = done.stdout.strip().splitlines()
    assert header.split()[:3] == ["thread", "graph", "status"]
    assert sorted((line.split()[0], line.split()[2]) for line in lines) == [
        ("answered", "idle"),
        ("done", "idle"),
    ]
    assert summary == "2 of 2 threads"
