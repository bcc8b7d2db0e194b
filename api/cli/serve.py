"""`holdpoint serve`: the HTTP API under uvicorn, on the store from HOLDPOINT_STORE.

Graphs come from `--graph NAME=path.py:attr` (repeatable), from `--config`
(a holdpoint.toml with `[graphs]` and `[server]` tables, or a LangGraph
`langgraph.json`), or, with neither, the seed examples. On a store with no
API key yet, it makes an agent, a reviewer and an auditor key, writes them to
a file only its owner may read (`service.bootstrap_keys`), and prints the
file's path and the refund story as curl lines (the keys themselves only on a
terminal). This module reads the options and
settings; the web stack (`api.cli.uvicorn_server`) is imported only when the
command runs, so that the other commands start without it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from api.cli.options import Commands, add_graph_option
from domain.record.store import backend_of, redacted
from service.settings import ServerSettings

DESCRIPTION = (
    "Serve the HTTP API (LangGraph-compatible and oversight endpoints) with uvicorn. "
    "The read models are kept up to date in this process; on PostgreSQL, --no-projector "
    "leaves that to `holdpoint projector` workers. --port 0 picks a free port."
)


def register(commands: Commands) -> None:
    """Add `serve` to the `holdpoint` subcommands."""
    serve = commands.add_parser("serve", help="serve the HTTP API", description=DESCRIPTION)
    add_graph_option(serve, "a graph to serve (repeatable); default: the seed examples")
    serve.add_argument(
        "--config",
        metavar="FILE",
        help="holdpoint.toml ([graphs], [server]) or a LangGraph langgraph.json (graphs)",
    )
    serve.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port to listen on (default 8000)")
    serve.add_argument(
        "--no-projector",
        action="store_true",
        help="PostgreSQL only: do not run the read models' projector in this process",
    )
    serve.add_argument(
        "--max-body-bytes", type=int, metavar="N", help="largest request body (default 1 MiB)"
    )
    serve.add_argument(
        "--cpu",
        type=int,
        metavar="N",
        help="Linux: run on CPU N only (less CPU per request; see service/cpu.py)",
    )
    serve.set_defaults(handler=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    from api.cli.uvicorn_server import run_server  # noqa: PLC0415 - the web stack
    from service.graph_loader import parse_graph_spec, read_config  # noqa: PLC0415

    config_file: str | None = args.config
    sources, server_table = ([], {}) if config_file is None else read_config(Path(config_file))
    sources += [parse_graph_spec(spec) for spec in args.graph]
    flags: dict[str, dict[str, Any]] = {
        "--host": {"host": args.host},
        "--port": {"port": args.port},
        "--no-projector": {"projector": False if args.no_projector else None},
        "--max-body-bytes": {"max_body_bytes": args.max_body_bytes},
        "--cpu": {"cpu": args.cpu},
    }
    try:
        settings = server_settings(config_file, server_table, flags)
    except SettingsError as error:
        print(f"holdpoint: error: {error}", file=sys.stderr)
        return 2
    if not settings.projector and backend_of(settings.store_url) != "postgres":
        print(
            "holdpoint: error: --no-projector needs a PostgreSQL store; on "
            f"{redacted(settings.store_url)} the read models run in the server",
            file=sys.stderr,
        )
        return 2
    return run_server(settings, sources)


class SettingsError(ValueError):
    """A setting refused, with where its value came from."""


def server_settings(
    config_file: str | None, server_table: dict[str, Any], flags: dict[str, dict[str, Any]]
) -> ServerSettings:
    """The environment, then the config file's `[server]` table, then each flag (by its
    name, e.g. `--port`); a bad value is refused naming where it came from."""
    try:
        settings = ServerSettings.from_env()
    except (TypeError, ValueError) as error:
        raise SettingsError(f"in the environment: {error}") from None
    try:
        settings = settings.updated(**server_table)
    except (TypeError, ValueError) as error:
        raise SettingsError(f"in the config file {config_file}: {error}") from None
    for flag, values in flags.items():
        try:
            settings = settings.updated(**values)
        except (TypeError, ValueError) as error:
            raise SettingsError(f"in the command-line flag {flag}: {error}") from None
    return settings
