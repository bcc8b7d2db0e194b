"""The `holdpoint` command: one subcommand per job, each a small handler.

Each command group is a module whose `register(commands)` adds its subcommands
and their handlers; `build_parser` calls them in the order the help lists
them. A handler's HoldpointError is a user error: one line on stderr, exit 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import Protocol

from api.cli import integrity
from api.cli.options import Commands
from domain.errors import HoldpointError
from domain.record.store import DEFAULT_STORE_URL
from service.bootstrap import configure_logging

Handler = Callable[[argparse.Namespace], int]
INTEGRITY_COMMANDS = frozenset({"verify", "seal", "export"})


class CommandGroup(Protocol):
    """A module of subcommands (`api.cli.keys`, ...)."""

    def register(self, commands: Commands) -> None: ...


def command_groups(command: str | None = None) -> tuple[CommandGroup, ...]:
    """Every command group, in the order of the help; for an integrity command, only
    theirs: `holdpoint verify` then starts without importing the others
    (tests/integrity/test_cli_start.py)."""
    if command in INTEGRITY_COMMANDS:
        return (integrity,)
    from api.cli import (  # noqa: PLC0415 - not imported by `holdpoint verify`
        db,
        demo,
        history,
        keys,
        privacy,
        projections,
        replay,
        report,
        retention,
        serve,
        sessions,
        threads,
        worker,
    )

    return (
        demo,
        serve,
        worker,
        db,
        keys,
        sessions,
        integrity,
        projections,
        threads,
        report,
        retention,
        privacy,
        history,
        replay,
    )


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The `holdpoint` parser: every subcommand, or, when `command` is an integrity
    command, only those (a faster start; their help and errors are the same)."""
    parser = argparse.ArgumentParser(
        prog="holdpoint",
        description=(
            "Human oversight for automated workflows. Every command reads the store "
            f"URL from HOLDPOINT_STORE (default {DEFAULT_STORE_URL})."
        ),
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in command_groups(command):
        group.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(argv[0] if argv else None).parse_args(argv)
    configure_logging()
    handler: Handler = args.handler
    try:
        return handler(args)
    except HoldpointError as error:
        print(f"holdpoint: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (`holdpoint history T | head`)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing at exit
        return 141  # as a shell reports a command SIGPIPE ended: 128 + 13


if __name__ == "__main__":
    raise SystemExit(main())
