"""`holdpoint worker`: runs from the store's queue, and takeovers, with no HTTP server.

Every `holdpoint serve` is a worker too; a deployment that keeps its API
processes apart from the processes that run graph code runs `holdpoint serve`
beside `holdpoint worker`s, all on one PostgreSQL store. A worker serves the
graphs it is given (the runs of other graphs are left to the processes that
serve them) and stops on SIGTERM or Ctrl-C once its runs have ended; a run it
cannot end in time is taken over by another process when its lease expires.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

import structlog

from api.cli.options import Commands, add_graph_option
from api.cli.serve import SettingsError, server_settings
from domain.record.store import open_store

log = structlog.get_logger()


def register(commands: Commands) -> None:
    """Add `worker` to the `holdpoint` subcommands."""
    worker = commands.add_parser(
        "worker",
        help="run queued runs and take over the runs of dead processes, until stopped",
        description=(
            "Take runs from the store's queue (multitask_strategy enqueue), run them, and "
            "take over the runs whose runner's lease expired; renew this process's leases. "
            "Runs until SIGTERM or Ctrl-C. Any number of workers and servers may share a "
            "store: each run has one runner at a time."
        ),
    )
    add_graph_option(worker, "a graph to run (repeatable); default: the seed examples")
    worker.add_argument(
        "--config", metavar="FILE", help="holdpoint.toml ([graphs], [server]) or langgraph.json"
    )
    worker.set_defaults(handler=run_worker)


def run_worker(args: argparse.Namespace) -> int:
    from service.graph_loader import load_graphs, parse_graph_spec, read_config  # noqa: PLC0415
    from service.services import build_runs  # noqa: PLC0415

    config_file: str | None = args.config
    sources, server_table = ([], {}) if config_file is None else read_config(Path(config_file))
    sources += [parse_graph_spec(spec) for spec in args.graph]
    try:
        settings = server_settings(config_file, server_table, {})
    except SettingsError as error:
        print(f"holdpoint: error: {error}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    with open_store(settings.store_url) as store:
        graphs = load_graphs(sources, store)
        runs, worker, _ = build_runs(settings, store, graphs)  # and the policy in force
        log.info("worker started", graphs=sorted(graphs), runner=runs.owner)
        stop.wait()
        worker.drain()
        runs.shutdown()
        worker.stop()
        runs.store.close()
        log.info("worker stopped", runner=runs.owner)
    return 0
