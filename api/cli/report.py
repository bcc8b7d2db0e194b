"""`holdpoint report`: the Article 14 oversight report for a period, from the read models.

The read models are imported when the parser is built (the formats' names)
or the handler runs, not with this module.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from api.cli.options import (
    Commands,
    UsageError,
    add_graph_filter,
    add_period_options,
    period,
)
from domain.record.store import open_store

if TYPE_CHECKING:
    from domain.record.application import Workflows

DEFAULT_FLOOR = 10.0  # seconds, before any oversight policy is on record

SEAL_KEY = "HOLDPOINT_SEAL_KEY"  # integrity.signing.KEY_VARIABLE, not imported to start fast


def register(commands: Commands) -> None:
    """Add `report` to the `holdpoint` subcommands."""
    from projections.report_formats import FORMATS  # noqa: PLC0415

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
    add_period_options(
        report,
        since="start of the period (default: 30 days before --until)",
        until="end of the period, excluded (default: now)",
    )
    add_graph_filter(report)
    report.add_argument(
        "--format", choices=list(FORMATS), default="json", help="output format (default json)"
    )
    report.add_argument(
        "--floor",
        type=float,
        metavar="SECONDS",
        help="decisions faster than this are flagged as possible rubber-stamping (default: "
        "the servers' rubber_stamp_seconds, as their oversight policy on record says; 10 "
        "before any is recorded)",
    )
    report.add_argument("--out", metavar="FILE", help="write the report here, not to stdout")
    report.add_argument(
        "--sign",
        action="store_true",
        help="JSON, with --out: compute the report at one stated log position, add a "
        "`computed_at` block (that position, the latest seal's position and root, the time) "
        f"and sign it with the seal key ({SEAL_KEY}, the latest seal's): the signature is "
        "written to FILE.sig; `holdpoint verify --report FILE` checks it",
    )
    report.set_defaults(handler=write_report)


def write_report(args: argparse.Namespace) -> int:
    from api.cli.reads import record_cli_read  # noqa: PLC0415
    from projections.catalog import runner_for  # noqa: PLC0415
    from projections.oversight_report import oversight_report  # noqa: PLC0415
    from projections.report_formats import FORMATS  # noqa: PLC0415

    now = datetime.now(UTC)
    since, until = period(args)
    until = now if until is None else until
    since = until - timedelta(days=30) if since is None else since
    if since >= until or (args.floor is not None and args.floor < 0):
        problem = "--since must be before --until" if since >= until else "--floor must be >= 0"
        print(f"holdpoint: error: {problem}", file=sys.stderr)
        return 2
    if args.sign:
        return _write_signed(args, since, until, now)
    with open_store(existing=True) as store:
        runner = runner_for(store)
        runner.catch_up()
        figures = oversight_report(
            runner.db,
            since=since,
            until=until,
            graph_id=args.graph,
            rubber_stamp_seconds=floor_of(args, store),
            now=now,
        )
        runner.close()
        scope = {"since": since.isoformat(), "until": until.isoformat(), "graph_id": args.graph}
        record_cli_read(store, "report", "oversight", scope)
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


def _write_signed(args: argparse.Namespace, since: datetime, until: datetime, now: datetime) -> int:
    """The JSON report computed at one log position, with `computed_at`, signed."""
    from api.cli.reads import record_cli_read  # noqa: PLC0415
    from integrity.export import check_seal_key  # noqa: PLC0415
    from integrity.report_signing import at_one_position, computed_at, write_signed  # noqa: PLC0415
    from integrity.sealing import latest_seal  # noqa: PLC0415
    from integrity.signing import load_private_key  # noqa: PLC0415
    from projections.catalog import runner_for  # noqa: PLC0415
    from projections.oversight_report import oversight_report  # noqa: PLC0415
    from projections.report_formats import to_json  # noqa: PLC0415

    if args.format != "json" or args.out is None:
        msg = "--sign signs a JSON report written to a file: give --out FILE (and no --format)"
        raise UsageError(msg)
    key = load_private_key()
    with open_store(existing=True) as store:
        seal = latest_seal(store)
        if seal is None:
            msg = "no seal is recorded in the store yet: run `holdpoint seal`, then sign"
            raise UsageError(msg)
        check_seal_key(seal, key)
        runner = runner_for(store)
        try:
            figures, position = at_one_position(
                runner.catch_up,
                lambda: [status.position for status in runner.status()],
                lambda: oversight_report(
                    runner.db,
                    since=since,
                    until=until,
                    graph_id=args.graph,
                    rubber_stamp_seconds=floor_of(args, store),
                    now=now,
                ),
            )
        finally:
            runner.close()
        scope = {"since": since.isoformat(), "until": until.isoformat(), "graph_id": args.graph}
        record_cli_read(store, "report", "oversight", scope)
    report = {**figures, "computed_at": computed_at(position, seal, now)}
    signature = write_signed(to_json(report), key, Path(args.out))
    print(
        f"Wrote the report to {args.out}, computed at log position {position:,} (the latest "
        f"seal: position {seal['position']:,}), and its signature by key "
        f"{signature['key_id']} to {args.out}.sig",
        file=sys.stderr,
    )
    return 0


def floor_of(args: argparse.Namespace, store: Workflows) -> float:
    """--floor, or the servers' rubber_stamp_seconds in the oversight policy on record."""
    from domain.oversight.policy_records import policy_in_force  # noqa: PLC0415

    if args.floor is not None:
        return float(args.floor)
    recorded = policy_in_force(store)
    floor = None if recorded is None else recorded.policy.get("rubber_stamp_seconds")
    return float(floor) if isinstance(floor, int | float) else DEFAULT_FLOOR
