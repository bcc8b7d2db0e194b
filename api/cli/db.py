"""`holdpoint db init`: the store's tables, made by the role that owns them.

Every table: the events and snapshots (with the insert function and the
append-only triggers), then each table beside them (`service/schema.py`), all
idempotent. On PostgreSQL it then prints, as SQL, the grants the servers' role
(`--role`) needs to run with `?create_tables=no`.
"""

from __future__ import annotations

import argparse

from api.cli.options import Commands, UsageError
from domain.record.store import open_store, redacted, store_url_from_env

DEFAULT_ROLE = "holdpoint_app"


def register(commands: Commands) -> None:
    """Add `db` and its subcommand `init` to the `holdpoint` subcommands."""
    db = commands.add_parser("db", help="manage the store's tables")
    db_commands = db.add_subparsers(dest="db_command", required=True, metavar="DB_COMMAND")
    init = db_commands.add_parser(
        "init",
        help="create the store's tables, functions and triggers (idempotent)",
        description=(
            "Create every table of the store (the events, the snapshots, the read models, "
            "the runs...), its insert function and its append-only triggers if they do not "
            "exist; run it as the role that owns them, before servers that open the store "
            "with ?create_tables=no. On PostgreSQL it prints the GRANT statements the "
            "servers' role needs."
        ),
    )
    init.add_argument(
        "--role",
        default=DEFAULT_ROLE,
        help=f"the servers' PostgreSQL role, for the GRANT statements (default {DEFAULT_ROLE})",
    )
    init.set_defaults(handler=db_init)


def db_init(args: argparse.Namespace) -> int:
    from projections.database import database_for  # noqa: PLC0415 - loaded by `db init` alone
    from service.schema import create_all, grant_statements  # noqa: PLC0415

    role: str = args.role
    if not role.strip():
        msg = "--role needs a role name (the servers' PostgreSQL role)"
        raise UsageError(msg)
    url = store_url_from_env()
    with open_store(url.replace("create_tables=no", "create_tables=yes")) as store:
        db = database_for(store)
        try:
            made = create_all(store, db)
            grants = grant_statements(store, db, role)
        finally:
            db.close()
    print(f"-- Store ready: {redacted(url)}")
    print(f"-- tables: {', '.join(made)}")
    if grants:
        print(f"-- the grants the servers' role {role} needs, to open it with ?create_tables=no:")
        print("\n".join(grants))
    return 0
