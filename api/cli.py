"""The `holdpoint` command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from api.bootstrap import configure_logging
from api.demo import run_demo
from domain.errors import HoldpointError
from domain.store import DEFAULT_STORE_URL


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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    configure_logging()
    try:
        if args.command == "demo":
            return run_demo(amount=args.amount, decision=args.decision)
    except HoldpointError as error:
        print(f"holdpoint: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
