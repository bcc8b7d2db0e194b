"""`holdpoint threads list|show`: the thread index, brought up to date first.

The statuses are the index's: `running`, `interrupted`, `completed` (a run
reached its end), `failed`, `cancelled`, and `idle` (recorded, never run).
The HTTP API, as LangGraph's, says `idle` for both completed and idle.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from api.cli.options import (
    Commands,
    UsageError,
    add_graph_filter,
    add_json_option,
    add_period_options,
    period,
)
from domain.errors import ThreadNotFoundError, ThreadUnreadableError
from domain.record.store import open_store

if TYPE_CHECKING:
    from projections.thread_index import ThreadIndex, ThreadSummary

# The thread index (and the database driver under it) is imported when the parser is
# built (its statuses) or a handler runs, not with this module.


def register(commands: Commands) -> None:
    """Add `threads` and its subcommands to the `holdpoint` subcommands."""
    from projections.thread_index import STATUSES  # noqa: PLC0415

    threads = commands.add_parser("threads", help="find threads, and show one")
    thread_commands = threads.add_subparsers(
        dest="threads_command", required=True, metavar="THREADS_COMMAND"
    )
    listing = thread_commands.add_parser(
        "list",
        help="threads, newest first, a page at a time",
        description=(
            "Threads newest first, found by graph, status, creation time and metadata. "
            "Times are ISO 8601 (2025-03-01 or 2025-03-01T09:30:00Z; UTC when no offset "
            "is given); --since is included, --until excluded. When more threads match "
            "than --limit, the last line gives the --after option for the next page."
        ),
    )
    add_graph_filter(listing)
    listing.add_argument(
        "--status",
        choices=STATUSES,
        help="only threads in this status (completed: ran to its end; idle: never run)",
    )
    add_period_options(
        listing,
        since="only threads created at or after this time",
        until="only threads created before this time",
    )
    listing.add_argument(
        "--metadata",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="only threads whose metadata KEY is VALUE, compared as JSON text (acme, 2, "
        "true); repeat for several, all of which must match",
    )
    listing.add_argument(
        "--limit", type=_positive, default=50, help="at most this many (default 50)"
    )
    listing.add_argument(
        "--after", metavar="CURSOR", help="the next page: the cursor the previous one printed"
    )
    listing.set_defaults(handler=list_threads)

    show = thread_commands.add_parser(
        "show",
        help="one thread's row in the index",
        description=(
            "The thread's graph, status, creation and last change, who started it, the "
            "thread it was forked from, its open interrupts and its metadata."
        ),
    )
    show.add_argument("thread_id", metavar="THREAD")
    add_json_option(show, "print the row as JSON")
    show.set_defaults(handler=show_thread)


@contextmanager
def _index() -> Iterator[ThreadIndex]:
    """The thread index of the store (which must exist), up to date."""
    from projections.catalog import runner_for  # noqa: PLC0415
    from projections.thread_index import ThreadIndex  # noqa: PLC0415

    with open_store(existing=True) as store:
        runner = runner_for(store)
        try:
            runner.catch_up()
            yield ThreadIndex(runner.db)
        finally:
            runner.close()


def list_threads(args: argparse.Namespace) -> int:
    since, until = period(args)
    metadata = dict(_pair(text) for text in args.metadata)
    if args.after is not None and "|" not in args.after:
        msg = f"--after {args.after!r} is not a cursor printed by `holdpoint threads list`"
        raise UsageError(msg)
    with _index() as index:
        page = index.search(
            graph_id=args.graph,
            status=args.status,
            created_after=since,
            created_before=until,
            metadata=metadata,
            limit=args.limit,
            after=args.after,
        )
    _say(f"{'thread':<28} {'graph':<16} {'status':<12} created (UTC)")
    for t in page.items:
        _say(f"{t.thread_id:<28} {t.graph_id:<16} {t.status:<12} {t.created_at}")
    _say(f"{len(page.items)} of {page.total} threads")
    if page.next_cursor is not None:
        _say(f"Next page: --after {shlex.quote(page.next_cursor)}")
    return 0


def show_thread(args: argparse.Namespace) -> int:
    from projections.quarantine import Quarantine  # noqa: PLC0415

    with _index() as index:
        row = index.get(args.thread_id)
        damaged = Quarantine(index.db).of_thread(args.thread_id)
    if row is None and damaged:  # its start cannot be decoded: the index never knew it
        first = damaged[0]
        why = first.error
        raise ThreadUnreadableError(args.thread_id, first.originator_version, first.event_name, why)
    if row is None:
        raise ThreadNotFoundError(args.thread_id)
    if args.json:
        quarantined = {"quarantined": [vars(event) for event in damaged]} if damaged else {}
        _say(json.dumps({**vars(row), **quarantined}, indent=2))
        return 0
    for label, value in _fields(row):
        _say(f"{label:<17}{value}")
    for event in damaged:  # the index passed it by; the thread itself cannot be read
        _say(
            f"{'damaged':<17}its event at version {event.originator_version} "
            f"({event.event_name}) cannot be decoded: {event.error}; run `holdpoint verify`"
        )
    return 0


def _fields(row: ThreadSummary) -> Iterator[tuple[str, str]]:
    yield "thread", row.thread_id
    yield "graph", row.graph_id
    yield "status", row.status
    yield "created (UTC)", row.created_at
    yield "updated (UTC)", row.updated_at
    yield "started by", row.started_by or "-"
    if row.forked_from is not None:
        yield "forked from", row.forked_from
    yield "open interrupts", str(row.open_interrupts)
    yield "metadata", json.dumps(row.metadata, sort_keys=True) if row.metadata else "-"


def _pair(text: str) -> tuple[str, str]:
    key, equals, value = text.partition("=")
    if not key or not equals:
        msg = f"--metadata {text!r} is not KEY=VALUE"
        raise UsageError(msg)
    return key, value


def _positive(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number < 1:
        msg = f"{text!r} is not a whole number of 1 or more"
        raise argparse.ArgumentTypeError(msg)
    return number


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
