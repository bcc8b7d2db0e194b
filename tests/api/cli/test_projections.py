"""`holdpoint projections status|rebuild`, run for real, on SQLite and PostgreSQL.

Each command runs as a subprocess on a store that the test has recorded
events into; no projector runs beside it. A rebuild in small batches runs the
same command (`api.cli.main.main`) with every runner's batches made smaller, so
that a short history is many batches: its progress is one bar, redrawn in
place on a terminal (a pseudo-terminal here) and a few lines anywhere else.
"""

from __future__ import annotations

import fcntl
import itertools
import os
import pty
import struct
import subprocess
import sys
import termios
import tty
from pathlib import Path
from typing import Any

import pytest

from domain.record.store import open_store
from projections.catalog import runner_for
from tests.conftest import store_url
from tests.projections.histories import REVIEWER, record_history

REPO = Path(__file__).resolve().parents[3]
# `holdpoint` with every runner applying BATCH positions per transaction: BATCH ARGS...
SMALL_BATCHES = """
import functools, sys
from api.cli import main as cli
from projections import catalog
from projections.runner import ProjectionRunner
size = int(sys.argv[1])
catalog.ProjectionRunner = functools.partial(
    ProjectionRunner, batch_size=size, rebuild_batch_size=size
)
raise SystemExit(cli.main(sys.argv[2:]))
"""


def holdpoint(
    url: str, *args: str, batch: int | None = None, stderr: Any = subprocess.PIPE
) -> subprocess.CompletedProcess[str]:
    command = ["-m", "api.cli.main"] if batch is None else ["-c", SMALL_BATCHES, str(batch)]
    return subprocess.run(
        [sys.executable, *command, *args],
        cwd=REPO,
        env={**os.environ, "HOLDPOINT_STORE": url},
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture(params=["sqlite", "postgres"])
def url(request, tmp_path) -> str:
    return store_url(request.param, tmp_path, request)


@pytest.fixture
def store(url):
    with open_store(url) as store:
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


def count(bar: str) -> int:
    """The positions done, from a drawn bar: `label [###...]  1,234/5,678  22%`."""
    return int(bar.split("] ", 1)[1].split("/", 1)[0].replace(",", ""))


def test_projections_status_shows_each_read_models_position_head_and_lag(url, store, runner):
    # Given read models caught up, then one more event (a cancellation)
    runner.catch_up()
    head = store.cancel("pending", REVIEWER, "no longer needed")

    # When
    done = holdpoint(url, "projections", "status")

    # Then
    assert done.returncode == 0, done.stderr
    assert table(done.stdout) == dict.fromkeys(runner.projections, (head - 1, head, 1))


def test_projections_rebuild_shows_one_bar_on_stderr_and_what_it_did_on_stdout(url, store, runner):
    # Given read models never brought up to date, and a history of one batch
    head = runner.head()

    # When
    done = holdpoint(url, "projections", "rebuild")

    # Then one bar, labelled with every read model, at the head
    assert done.returncode == 0, done.stderr
    names = ", ".join(runner.projections)
    assert done.stdout == f"Rebuilt {names}: {head} events applied\n"
    *_, bar = done.stderr.splitlines()  # (a batch ends at the history's purge: two lines)
    assert bar.startswith(f"{names} [")
    assert bar.endswith(f"{head:,}/{head:,} 100%")
    assert all(status.lag == 0 for status in runner.status())


def test_a_rebuild_of_many_batches_writes_a_line_per_tenth_when_not_on_a_terminal(
    url, store, runner
):
    # Given a history of many more batches of two positions than ten
    head = runner.head()
    batches = -(-head // 2)

    # When it is rebuilt with stderr a pipe
    done = holdpoint(url, "projections", "rebuild", batch=2)

    # Then the first line, then at most one per tenth of the way, each further on, the
    # last at the head
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"Rebuilt {', '.join(runner.projections)}: {head} events applied\n"
    lines = done.stderr.splitlines()
    assert 2 <= len(lines) <= 11 < batches
    assert all(line.startswith(f"{', '.join(runner.projections)} [") for line in lines)
    assert [count(line) for line in lines] == sorted({count(line) for line in lines})
    assert lines[-1].endswith(f"{head:,}/{head:,} 100%")
    assert all(status.lag == 0 for status in runner.status())


def test_a_rebuild_of_many_batches_redraws_one_line_that_fits_a_terminal(url, store, runner):
    # Given a history of many batches, and stderr a terminal 72 columns wide
    head = runner.head()
    main, secondary = pty.openpty()
    tty.setraw(secondary)  # the bytes as written: no "\n" -> "\r\n"
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 72, 0, 0))

    # When
    try:
        done = holdpoint(url, "projections", "rebuild", batch=2, stderr=secondary)
    finally:
        os.close(secondary)
    screen = read_all(main)

    # Then one line, redrawn once per batch, never wider than the terminal
    assert done.returncode == 0, screen
    assert screen.count("\n") == 1
    assert screen.endswith("\n")
    frames = screen[:-1].split("\r")
    assert frames[0] == ""
    assert all(len(frame) <= 71 for frame in frames)
    assert frames[1].startswith("pending_approvals")
    assert "…" in frames[1]  # the label cut to fit
    counts = [count(frame) for frame in frames[1:]]
    steps = {b - a for a, b in itertools.pairwise([0, *counts])}
    assert counts[-1] == head
    assert steps <= {1, 2}  # batches of two; the one that ends at the history's purge may be one
    assert frames[-1].rstrip().endswith(f"{head:,}/{head:,} 100%")


def read_all(fd: int) -> str:
    """What a pseudo-terminal's other end wrote, until it was closed."""
    chunks = []
    try:
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    except OSError:  # EIO: no writer left
        pass
    finally:
        os.close(fd)
    return b"".join(chunks).decode()


def test_projections_rebuild_of_one_read_model_names_it(url, store, runner):
    runner.catch_up()

    done = holdpoint(url, "projections", "rebuild", "thread_index")

    assert done.returncode == 0, done.stderr
    assert done.stdout == f"Rebuilt thread_index: {runner.head()} events applied\n"
    *_, bar = done.stderr.splitlines()  # (a batch ends at the history's purge: two lines)
    assert bar.startswith("thread_index ")


def test_a_rebuild_of_one_read_model_reports_the_progress_of_that_model_alone(store, runner):
    # Given every read model caught up
    runner.catch_up()
    reported = []

    # When one is rebuilt
    runner.rebuild(["thread_index"], progress=lambda *report: reported.append(report))

    # Then only its progress is reported (the others are at the head, not being fed)
    head = runner.head()
    assert {name for name, _, _ in reported} == {"thread_index"}
    assert reported[-1] == ("thread_index", head, head)


def test_projections_rebuild_of_an_unknown_read_model_exits_2_with_a_one_line_error(
    url, store, runner
):
    done = holdpoint(url, "projections", "rebuild", "nope")

    assert done.returncode == 2
    assert done.stdout == ""
    [line] = done.stderr.strip().splitlines()
    assert line == (
        f"holdpoint: error: Unknown projection 'nope': use one of {', '.join(runner.projections)}"
    )
