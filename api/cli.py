"""The `holdpoint` command: one subcommand per job, each a small handler."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from api.bootstrap import configure_logging
from api.demo import run_demo
from domain.errors import HoldpointError
from domain.store import DEFAULT_STORE_URL, open_store, redacted, store_url_from_env

Handler = Callable[[argparse.Namespace], int]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="holdpoint",
        description=(
            "Human oversight for automated workflows. Every command reads the store "
            f"URL from HOLDPOINT_STORE (default {DEFAULT_STORE_URL})."
        ),
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = commands.add_parser(
        "demo",
        help="run the refund story end to end on the store, and show its events",
        description=(
            "Run the seed refund graph on the store: pause for approval, resume with a "
            "decision, show the recorded events with their hashes and verify the chain."
        ),
    )
    demo.add_argument("--amount", type=float, default=250.0, help="refund amount (default 250)")
    demo.add_argument(
        "--decision",
        choices=["approve", "reject"],
        default="approve",
        help="the reviewer's decision (default approve)",
    )
    demo.set_defaults(handler=_demo)

    db = commands.add_parser("db", help="manage the store's tables")
    db_commands = db.add_subparsers(dest="db_command", required=True, metavar="DB_COMMAND")
    init = db_commands.add_parser(
        "init",
        help="create the store's tables, functions and triggers (idempotent)",
        description=(
            "Create the store's tables, its insert function and its append-only "
            "triggers if they do not exist; run it as the role that owns them, "
            "before servers that open the store with ?create_tables=no."
        ),
    )
    init.set_defaults(handler=_db_init)
    return parser


def _demo(args: argparse.Namespace) -> int:
    return run_demo(amount=args.amount, decision=args.decision)


def _db_init(_: argparse.Namespace) -> int:
    url = store_url_from_env()
    with open_store(url.replace("create_tables=no", "create_tables=yes")):
        print(f"Store ready: {redacted(url)}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    configure_logging()
    handler: Handler = args.handler
    try:
        return handler(args)
    except HoldpointError as error:
        print(f"holdpoint: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
