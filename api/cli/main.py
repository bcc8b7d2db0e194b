"""The `holdpoint` command: one subcommand per job, each a small handler."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import structlog

from domain.errors import HoldpointError
from domain.record.store import DEFAULT_STORE_URL, open_store, redacted, store_url_from_env
from service.bootstrap import configure_logging

# The modules behind the other subcommands (the API, the read models, time travel)
# are imported when their parser is built or their handler runs, not at start:
# `holdpoint verify` then starts without them (see `build_parser`).

Handler = Callable[[argparse.Namespace], int]
log = structlog.get_logger()
INTEGRITY_COMMANDS = frozenset({"verify", "seal", "export"})


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
    if command in INTEGRITY_COMMANDS:
        from api.cli.integrity import register  # noqa: PLC0415

        register(commands)
        return parser
    _add_all_commands(commands)
    return parser


def _add_all_commands(commands: Any) -> None:
    from api.cli import history as history_cli  # noqa: PLC0415
    from api.cli import replay as replay_cli  # noqa: PLC0415
    from api.cli import threads as threads_cli  # noqa: PLC0415
    from api.cli.integrity import register as add_integrity_commands  # noqa: PLC0415
    from api.cli.keys import add_keys_commands  # noqa: PLC0415
    from api.cli.serve import add_serve_command  # noqa: PLC0415
    from projections.report_formats import FORMATS  # noqa: PLC0415

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
    add_serve_command(commands)

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

    add_keys_commands(commands)
    add_integrity_commands(commands)

    projections = commands.add_parser("projections", help="inspect or rebuild the read models")
    projection_commands = projections.add_subparsers(
        dest="projections_command", required=True, metavar="PROJECTIONS_COMMAND"
    )
    status = projection_commands.add_parser(
        "status", help="each read model's position in the event log, and its lag"
    )
    status.set_defaults(handler=_projections_status)
    rebuild = projection_commands.add_parser(
        "rebuild",
        help="empty read models and apply the whole event log again, with progress",
        description=(
            "Rebuild the named read models (default: all) from position zero, in one pass "
            "over the log, with one progress bar on stderr (redrawn on a terminal, else a "
            "line per tenth of the way)."
        ),
    )
    rebuild.add_argument("names", nargs="*", metavar="NAME", help="read models to rebuild")
    rebuild.set_defaults(handler=_projections_rebuild)

    projector = commands.add_parser(
        "projector",
        help="keep the read models up to date, as a worker, until stopped",
        description=(
            "Apply new events to every read model as they are recorded, and record the "
            "expiry of overdue interrupts; runs until SIGTERM or Ctrl-C. Several "
            "projectors may run: each batch is applied, and each expiry recorded, once."
        ),
    )
    projector.add_argument(
        "--poll",
        type=float,
        default=0.2,
        help="seconds between looks at the log (default 0.2); on PostgreSQL each commit "
        "also wakes the projector at once (LISTEN/NOTIFY)",
    )
    history_cli.add_graph_option(projector)  # recording an expiry reads the thread
    projector.set_defaults(handler=_projector)

    threads_cli.register(commands)

    report = commands.add_parser(
        "report",
        help="the Article 14 oversight report for a period, as JSON, CSV or HTML",
        description=(
            "Interrupts raised, decisions by kind and reviewer, time to decision, fast "
            "decisions, override rates, deadline breaches, cancellations, the open backlog "
            "and coverage, each figure saying how it is computed. Dates are ISO 8601 "
            "(2025-03-01 or 2025-03-01T09:30:00Z; UTC when no offset is given); the period "
            "includes --since and excludes --until. The read models are brought up to date "
            "first."
        ),
    )
    report.add_argument("--since", help="start of the period (default: 30 days before --until)")
    report.add_argument("--until", help="end of the period, excluded (default: now)")
    report.add_argument("--graph", help="only this graph")
    report.add_argument(
        "--format", choices=list(FORMATS), default="json", help="output format (default json)"
    )
    report.add_argument(
        "--floor",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="decisions faster than this are flagged as possible rubber-stamping (default 10)",
    )
    report.add_argument("--out", metavar="FILE", help="write the report here, not to stdout")
    report.set_defaults(handler=_report)
    history_cli.register(commands)
    replay_cli.register(commands)


def _demo(args: argparse.Namespace) -> int:
    from api.cli.demo import run_demo  # noqa: PLC0415

    return run_demo(amount=args.amount, decision=args.decision)


def _db_init(_: argparse.Namespace) -> int:
    url = store_url_from_env()
    with open_store(url.replace("create_tables=no", "create_tables=yes")):
        print(f"Store ready: {redacted(url)}")
    return 0


def _projections_status(_: argparse.Namespace) -> int:
    from projections.catalog import runner_for  # noqa: PLC0415

    with open_store(existing=True) as store:
        runner = runner_for(store)
        print(f"{'projection':<20} {'position':>10} {'head':>10} {'lag':>8}")
        for status in runner.status():
            print(f"{status.name:<20} {status.position:>10} {status.head:>10} {status.lag:>8}")
        runner.close()
    return 0


def _projections_rebuild(args: argparse.Namespace) -> int:
    from api.cli.progress import ProgressBar  # noqa: PLC0415
    from projections.catalog import runner_for  # noqa: PLC0415

    with open_store(existing=True) as store:
        runner = runner_for(store)
        names = ", ".join(args.names or runner.projections)
        bar = ProgressBar(label=names)  # one pass feeds them all: one bar
        try:
            applied = runner.rebuild(args.names or None, progress=bar)
        except ValueError as error:
            bar.finish()
            print(f"holdpoint: error: {error}", file=sys.stderr)
            return 2
        bar.finish()
        print(f"Rebuilt {names}: {applied} events applied")
        runner.close()
    return 0


def _projector(args: argparse.Namespace) -> int:
    from api.cli.history import load_graph_reducers  # noqa: PLC0415
    from projections.catalog import runner_for  # noqa: PLC0415
    from projections.deadlines import expire_overdue  # noqa: PLC0415

    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    with open_store() as store:
        load_graph_reducers(args.graph, store)
        runner = runner_for(store)
        log.info("projector started", projections=list(runner.projections), poll=args.poll)
        runner.run_forever(
            stop, poll=args.poll, after_catch_up=lambda: expire_overdue(store, runner.db)
        )
        log.info("projector stopped", status=[vars(s) for s in runner.status()])
        runner.close()
    return 0


def _report(args: argparse.Namespace) -> int:
    from projections.catalog import runner_for  # noqa: PLC0415
    from projections.oversight_report import oversight_report  # noqa: PLC0415
    from projections.report_formats import FORMATS  # noqa: PLC0415

    now = datetime.now(UTC)
    since = None if args.since is None else parse_moment("--since", args.since)
    until = now if args.until is None else parse_moment("--until", args.until)
    since = until - timedelta(days=30) if since is None else since
    if since >= until or args.floor < 0:
        problem = "--since must be before --until" if since >= until else "--floor must be >= 0"
        print(f"holdpoint: error: {problem}", file=sys.stderr)
        return 2
    with open_store(existing=True) as store:
        runner = runner_for(store)
        runner.catch_up()
        figures = oversight_report(
            runner.db,
            since=since,
            until=until,
            graph_id=args.graph,
            rubber_stamp_seconds=args.floor,
            now=now,
        )
        runner.close()
    text = FORMATS[args.format](figures)
    if args.out is None:
        sys.stdout.write(text)
        return 0
    try:
        Path(args.out).write_text(text, encoding="utf-8")
    except OSError as error:
        print(f"holdpoint: error: cannot write {args.out}: {error.strerror}", file=sys.stderr)
        return 2
    print(f"Wrote the {args.format} report to {args.out}", file=sys.stderr)
    return 0


class BadMomentError(HoldpointError, ValueError):
    """A date or time option that is not ISO 8601."""


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


if __name__ == "__main__":
    raise SystemExit(main())
