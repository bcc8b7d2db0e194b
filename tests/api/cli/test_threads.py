"""`holdpoint threads list|show`, run for real, on SQLite and PostgreSQL.

Each command runs as a subprocess on a store holding one thread of each kind
(`record_history`); no projector runs beside it, so each command brings the
thread index up to date first.
"""

from __future__ import annotations

import json
import re
import shlex

import pytest

from domain.record.store import open_store
from projections.catalog import runner_for
from projections.thread_index import ThreadIndex, ThreadSummary
from tests.cli_process import holdpoint
from tests.conftest import store_url
from tests.projections.histories import REVIEWER, pipeline_graph, record_history

NEWEST_FIRST = ["fork", "done", "failed", "stopped", "both", "pending", "answered"]


@pytest.fixture(params=["sqlite", "postgres"])
def url(request, tmp_path) -> str:
    """A store holding `record_history`'s threads, its read models not built."""
    url = store_url(request.param, tmp_path, request)
    with open_store(url) as store:
        record_history(store)
    return url


def listed(url: str, *args: str) -> tuple[list[tuple[str, str]], str, str | None]:
    """`threads list`: its (thread, status) rows, its count line and its next cursor."""
    done = holdpoint(url, "threads", "list", *args)
    assert done.returncode == 0, done.stderr
    header, *lines = done.stdout.strip().splitlines()
    assert header.split() == ["thread", "graph", "status", "created", "(UTC)"]
    after = None
    if lines[-1].startswith("Next page: "):
        *lines, next_page = lines
        [option, after] = shlex.split(next_page.removeprefix("Next page: "))
        assert option == "--after"
    *rows, summary = lines
    return [(line.split()[0], line.split()[2]) for line in rows], summary, after


def indexed(url: str, thread_id: str) -> ThreadSummary:
    """The thread's row, read here."""
    with open_store(url) as store:
        runner = runner_for(store)
        runner.catch_up()
        row = ThreadIndex(runner.db).get(thread_id)
        runner.close()
    assert row is not None
    return row


# -- list --------------------------------------------------------------------


def test_threads_list_shows_every_thread_newest_first_with_its_status(url):
    rows, summary, after = listed(url)

    assert rows == [
        ("fork", "interrupted"),
        ("done", "completed"),
        ("failed", "failed"),
        ("stopped", "cancelled"),
        ("both", "interrupted"),
        ("pending", "interrupted"),
        ("answered", "completed"),
    ]
    assert (summary, after) == ("7 of 7 threads", None)


def test_threads_list_completed_lists_the_threads_that_ran_to_their_end(url):
    # Given (record_history) two finished threads, and one recorded but never run
    with open_store(url) as store:
        store.record(pipeline_graph(store).start_thread("new", {"metadata": {}}, REVIEWER))

    # When
    completed, summary, _ = listed(url, "--status", "completed")
    idle, _, _ = listed(url, "--status", "idle")

    # Then
    assert completed == [("done", "completed"), ("answered", "completed")]
    assert summary == "2 of 2 threads"
    assert idle == [("new", "idle")]


def test_threads_list_since_and_until_bound_the_creation_time(url):
    # Given the creation times of two threads in the middle of the history
    since, until = indexed(url, "both").created_at, indexed(url, "failed").created_at

    # When
    rows, summary, _ = listed(url, "--since", since, "--until", until)

    # Then --since is included, --until excluded
    assert [thread for thread, _ in rows] == ["stopped", "both"]
    assert summary == "2 of 2 threads"


def test_threads_list_metadata_keeps_the_threads_with_every_pair(url):
    rows, _, _ = listed(url, "--metadata", "customer=acme")
    none, summary, _ = listed(url, "--metadata", "customer=acme", "--metadata", "tier=2")

    assert rows == [("done", "completed")]
    assert (none, summary) == ([], "0 of 0 threads")


def test_threads_list_pages_with_the_cursor_it_prints(url):
    # When the list is walked three at a time, each page after the cursor of the last
    walked, summaries, after = [], [], None
    while True:
        rows, summary, after = listed(url, "--limit", "3", *(["--after", after] if after else []))
        walked += [thread for thread, _ in rows]
        summaries.append(summary)
        if after is None:
            break

    # Then every thread once, newest first
    assert walked == NEWEST_FIRST
    assert summaries == ["3 of 7 threads", "3 of 7 threads", "1 of 7 threads"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--since", "yesterday"], "--since 'yesterday' is not an ISO 8601 date or time"),
        (["--since", "2025-03-02", "--until", "2025-03-01"], "--since must be before --until"),
        (["--metadata", "customer"], "--metadata 'customer' is not KEY=VALUE"),
        (["--after", "page-2"], "--after 'page-2' is not a cursor printed by"),
    ],
)
def test_threads_list_refuses_an_unreadable_option_in_one_line_with_exit_2(
    sqlite_url, args, message
):
    done = holdpoint(sqlite_url, "threads", "list", *args)

    assert (done.returncode, done.stdout) == (2, "")
    [line] = done.stderr.splitlines()
    assert line.startswith(f"holdpoint: error: {message}")


# -- show --------------------------------------------------------------------


def test_threads_show_prints_the_threads_row(url):
    done = holdpoint(url, "threads", "show", "both")

    assert done.returncode == 0, done.stderr
    row = indexed(url, "both")
    fields = dict(re.split(r"\s{2,}", line, maxsplit=1) for line in done.stdout.splitlines())
    assert fields == {
        "thread": "both",
        "graph": "parallel",
        "status": "interrupted",
        "created (UTC)": row.created_at,
        "updated (UTC)": row.updated_at,
        "started by": row.started_by,
        "open interrupts": "1",  # one of its two questions is answered
        "metadata": "-",
    }


def test_threads_show_json_gives_the_row_as_data(url):
    done = holdpoint(url, "threads", "show", "fork", "--json")

    assert done.returncode == 0, done.stderr
    row = json.loads(done.stdout)
    assert {key: row[key] for key in ("thread_id", "graph_id", "status", "forked_from")} == {
        "thread_id": "fork",
        "graph_id": "refund",
        "status": "interrupted",
        "forked_from": "answered",
    }
    assert row["open_interrupts"] == 1
    assert row["created_at"] <= row["updated_at"]
    assert json.loads(holdpoint(url, "threads", "show", "done", "--json").stdout)["metadata"] == {
        "customer": "acme"
    }


def test_threads_show_of_an_unknown_thread_is_a_one_line_error_with_exit_2(url):
    done = holdpoint(url, "threads", "show", "nope")

    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "holdpoint: error: Thread 'nope' does not exist\n"


def test_threads_show_refuses_a_sqlite_file_that_is_not_there(tmp_path):
    missing = tmp_path / "missing.db"

    done = holdpoint(f"sqlite:///{missing}", "threads", "show", "t1")

    assert (done.returncode, done.stdout) == (2, "")
    assert f"No store at {missing}" in done.stderr
    assert not missing.exists()
