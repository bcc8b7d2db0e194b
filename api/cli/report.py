"""`holdpoint report`: the Article 14 oversight report for a period, from the read models.

The read models are imported when the parser is built (the formats' names)
or the handler runs, not with this module.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from api.cli.options import Commands, add_graph_filter, add_period_options, period
from domain.record.store import open_store


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
        default=10.0,
        metavar="SECONDS",
        help="decisions faster than this are flagged as possible rubber-stamping (default 10)",
    )
    report.add_argument("--out", metavar="FILE", help="write the report here, not to stdout")
    report.set_defaults(handler=write_report)


def write_report(args: argparse.Namespace) -> int:
    from projections.catalog import runner_for  # noqa: PLC0415
    from projections.oversight_report import oversight_report  # noqa: PLC0415
    from projections.report_formats import FORMATS  # noqa: PLC0415

    now = datetime.now(UTC)
    since, until = period(args)
    until = now if until is None else until
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
