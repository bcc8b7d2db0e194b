"""`holdpoint serve`: the HTTP API under uvicorn, on the store from HOLDPOINT_STORE.

Graphs come from `--graph NAME=path.py:attr` (repeatable), from `--config`
(a holdpoint.toml with `[graphs]` and `[server]` tables, or a LangGraph
`langgraph.json`), or, with neither, the seed examples. On a store with no
API key yet, it makes an agent, a reviewer and an auditor key and prints them
once, with the refund story as curl lines. The web stack is imported only
when the command runs, so that the other commands start without it.
"""

from __future__ import annotations

import argparse
from typing import Any

DESCRIPTION = (
    "Serve the HTTP API (LangGraph-compatible and oversight endpoints) with uvicorn. "
    "The read models are kept up to date in this process; on PostgreSQL, --no-projector "
    "leaves that to `holdpoint projector` workers. --port 0 picks a free port."
)


def add_serve_command(commands: Any) -> None:
    serve = commands.add_parser("serve", help="serve the HTTP API", description=DESCRIPTION)
    serve.add_argument(
        "--graph",
        action="append",
        default=[],
        metavar="NAME=PATH.py:ATTR",
        help="a graph to serve (repeatable); default: the seed examples",
    )
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
    serve.set_defaults(handler=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    from api.cli.server import serve  # noqa: PLC0415 - the web stack, only for this command

    return serve(
        graph_specs=args.graph,
        config_file=args.config,
        host=args.host,
        port=args.port,
        no_projector=args.no_projector,
        max_body_bytes=args.max_body_bytes,
    )
