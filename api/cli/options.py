"""What several command groups share: their options, and how their values are read.

Imported by the groups, never the other way round, and light (the standard
library and `domain.errors`): `holdpoint verify` imports it too.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TypeAlias

from domain.errors import HoldpointError

if TYPE_CHECKING:
    from domain.record.application import Workflows

# What each group's `register(commands)` adds its subcommands to.
Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

REDUCERS_HELP = (
    "graph NAME's code, for the reducers its state declares (repeatable): they "
    "fold the recorded updates, no node runs; not needed when the state uses only "
    "well-known reducers (operator.add, ...) or none"
)


class UsageError(HoldpointError, ValueError):
    """Options that cannot be read or do not go together, or an output file that cannot
    be written: `main` prints it on one line, with exit status 2."""


class BadMomentError(UsageError):
    """A date or time option that is not ISO 8601."""


def add_json_option(parser: argparse.ArgumentParser, help_text: str = "print JSON") -> None:
    """`--json`: the command prints JSON instead of text."""
    parser.add_argument("--json", action="store_true", help=help_text)


def add_graph_option(parser: argparse.ArgumentParser, help_text: str = REDUCERS_HELP) -> None:
    """`--graph NAME=PATH.py:ATTR` (repeatable), graphs' code: by default for a command
    that reads threads, the graphs whose state reducers it may need
    (`load_graph_reducers`)."""
    parser.add_argument(
        "--graph", action="append", default=[], metavar="NAME=PATH.py:ATTR", help=help_text
    )


def add_graph_filter(parser: argparse.ArgumentParser) -> None:
    """`--graph GRAPH`: only what belongs to the graph of that id."""
    parser.add_argument("--graph", help="only this graph")


def load_graph_reducers(specs: list[str], store: Workflows) -> None:
    """Compile the graphs of `--graph` on `store`, which registers their reducers."""
    # Graph loading compiles user code: imported by the commands that read threads.
    from service.graph_loader import load_graph, parse_graph_spec  # noqa: PLC0415

    for spec in specs:
        load_graph(parse_graph_spec(spec), store)


def add_period_options(parser: argparse.ArgumentParser, *, since: str, until: str) -> None:
    """`--since` and `--until`, ISO 8601 moments (read with `period`), with their help."""
    parser.add_argument("--since", help=since)
    parser.add_argument("--until", help=until)


def period(args: argparse.Namespace) -> tuple[datetime | None, datetime | None]:
    """`--since` and `--until` in UTC, None when not given; a UsageError when both are
    given and --since is not before --until."""
    since = None if args.since is None else parse_moment("--since", args.since)
    until = None if args.until is None else parse_moment("--until", args.until)
    if since is not None and until is not None and since >= until:
        msg = "--since must be before --until"
        raise UsageError(msg)
    return since, until


def parse_moment(option: str, text: str) -> datetime:
    """`text`, the value of `option`, an ISO 8601 date or time (2025-03-01,
    2025-03-01T09:30:00Z; UTC when it has no offset), in UTC; BadMomentError, a usage
    error, if it is not one."""
    try:
        moment = datetime.fromisoformat(text)
        return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC)
    except (ValueError, OverflowError):  # OverflowError: 0001-01-01T00:00+01:00
        msg = (
            f"{option} {text!r} is not an ISO 8601 date or time "
            "(e.g. 2025-03-01 or 2025-03-01T09:30:00Z)"
        )
        raise BadMomentError(msg) from None
