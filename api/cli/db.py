"""`holdpoint db init`: the store's tables, made by the role that owns them."""

from __future__ import annotations

import argparse

from api.cli.options import Commands
from domain.record.store import open_store, redacted, store_url_from_env


def register(commands: Commands) -> None:
    """Add `db` and its subcommand `init` to the `holdpoint` subcommands."""
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
    init.set_defaults(handler=db_init)


def db_init(_: argparse.Namespace) -> int:
    url = store_url_from_env()
    with open_store(url.replace("create_tables=no", "create_tables=yes")):
        print(f"Store ready: {redacted(url)}")
    return 0
