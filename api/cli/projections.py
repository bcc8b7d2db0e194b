"""`holdpoint projections status|rebuild` and `holdpoint projector`: the read models.

The read models (`projections`, and the database driver under them) are
imported by the handlers, not with this module.

An event that cannot be decoded is quarantined (`projections/quarantine.py`): a
rebuild and the projector print one line about it on stderr and go on; the
rebuild still exits 0, its read models whole but for such events (`holdpoint
verify` is the command that fails on a damaged store).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import TYPE_CHECKING

import structlog

from api.cli.options import Commands, add_graph_option, load_graph_reducers
from domain.record.store import open_store

if TYPE_CHECKING:
    from projections.quarantine import QuarantinedEvent

log = structlog.get_logger()


def register(commands: Commands) -> None:
    """Add `projections` (with `status` and `rebuild`) and `projector` to the `holdpoint`
    subcommands."""
    projections = commands.add_parser("projections", help="inspect or rebuild the read models")
    projection_commands = projections.add_subparsers(
        dest="projections_command", required=True, metavar="PROJECTIONS_COMMAND"
    )
    status = projection_commands.add_parser(
        "status", help="each read model's position in the event log, and its lag"
    )
    status.set_defaults(handler=projections_status)
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
    rebuild.set_defaults(handler=projections_rebuild)

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
        "also wakes the projector at once (LISTEN/NOTIFY); overdue interrupts are looked "
        "for after a look, at most once this often",
    )
    projector.add_argument(
        "--gather",
        type=float,
        default=0.02,
        help="seconds at least between two batches while commits stream in (default "
        "0.02): each batch takes the commits of that time, not one each; a commit after a "
        "quiet spell is applied at once; 0 applies each commit as it comes",
    )
    add_graph_option(projector)  # recording an expiry reads the thread
    projector.set_defaults(handler=run_projector)


def say_quarantined(event: QuarantinedEvent) -> None:
    """One line on stderr for an event passed by because it cannot be decoded."""
    print(
        f"holdpoint: quarantined the event at {event.line()}; run `holdpoint verify`",
        file=sys.stderr,
        flush=True,
    )


def projections_status(_: argparse.Namespace) -> int:
    from projections.catalog import runner_for  # noqa: PLC0415
    from projections.quarantine import Quarantine  # noqa: PLC0415

    with open_store(existing=True) as store:
        runner = runner_for(store)
        print(f"{'projection':<20} {'position':>10} {'head':>10} {'lag':>8}")
        for status in runner.status():
            print(f"{status.name:<20} {status.position:>10} {status.head:>10} {status.lag:>8}")
        quarantined = Quarantine(runner.db).count()
        if quarantined:
            print(
                f"{quarantined} event(s) quarantined: they cannot be decoded "
                "(GET /readyz names them; `holdpoint verify` says what is wrong)"
            )
        runner.close()
    return 0


def projections_rebuild(args: argparse.Namespace) -> int:
    from api.cli.progress import ProgressBar  # noqa: PLC0415
    from projections.catalog import runner_for  # noqa: PLC0415

    with open_store(existing=True) as store:
        runner = runner_for(store)
        quarantined: list[QuarantinedEvent] = []

        def passed_by(event: QuarantinedEvent) -> None:
            quarantined.append(event)
            say_quarantined(event)

        runner.on_quarantine = passed_by
        names = ", ".join(args.names or runner.projections)
        bar = ProgressBar(label=names)  # one pass feeds them all: one bar
        try:
            applied = runner.rebuild(args.names or None, progress=bar)
        except ValueError as error:
            bar.finish()
            print(f"holdpoint: error: {error}", file=sys.stderr)
            return 2
        bar.finish()
        note = (
            f"; {len(quarantined)} event(s) quarantined, as they cannot be decoded"
            if quarantined
            else ""
        )
        print(f"Rebuilt {names}: {applied} events applied{note}")
        runner.close()
    return 0


def run_projector(args: argparse.Namespace) -> int:
    from projections.catalog import runner_for  # noqa: PLC0415
    from projections.deadlines import DeadlineWorker  # noqa: PLC0415

    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    with open_store() as store:
        load_graph_reducers(args.graph, store)
        runner = runner_for(store)
        runner.on_quarantine = say_quarantined
        log.info("projector started", projections=list(runner.projections), poll=args.poll)
        runner.run_forever(
            stop,
            poll=args.poll,
            after_catch_up=DeadlineWorker(store, runner.db, args.poll),
            gather=args.gather,
        )
        log.info("projector stopped", status=[vars(s) for s in runner.status()])
        runner.close()
    return 0
