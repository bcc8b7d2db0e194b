"""`holdpoint keys create|list|revoke`: API keys of principals, from the command line.

The operator who runs a command is recorded as its actor: the local OS
user, marked unauthenticated (see `domain.access.actor.local_actor`). Errors are
HoldpointErrors, which `api.cli.main.main` prints on one line with status 2.

A key's role is a built-in one or a custom one on record: a server records its
configured roles at start, and `keys create --config holdpoint.toml` records that
file's `[roles]` (when they changed) before it makes the key.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, date, datetime
from pathlib import Path

from api.cli.options import Commands
from domain.access.actor import local_actor
from domain.access.identity import ROLES
from domain.access.keyring import KeyInfo, Keyring
from domain.access.role_records import record_roles
from domain.record.store import open_store
from service.settings import roles_in


def register(commands: Commands) -> None:
    """Add `keys` and its subcommands to the `holdpoint` subcommands."""
    keys = commands.add_parser(
        "keys",
        help="create, list and revoke API keys",
        description=(
            "API keys of principals. Each key has one role: "
            f"{', '.join(ROLES)}, or a custom one ([roles] of a holdpoint.toml). Only a "
            "hash of a key is stored; creation and revocation are recorded as events."
        ),
    )
    key_commands = keys.add_subparsers(dest="keys_command", required=True, metavar="KEYS_COMMAND")

    create = key_commands.add_parser(
        "create",
        help="make a key for a principal; the key is the last line of the output",
        description=(
            "Make a new API key for a principal with a role, and print it once, as the "
            "last line of the output: it cannot be shown again."
        ),
    )
    create.add_argument("--principal", required=True, metavar="ID", help="who the key is for")
    create.add_argument(
        "--role",
        required=True,
        metavar="ROLE",
        help=f"one of {', '.join(ROLES)}, or a custom role on record or in --config",
    )
    create.add_argument(
        "--config",
        metavar="FILE",
        help="a holdpoint.toml whose [roles] are recorded (when they changed) first",
    )
    create.add_argument("--note", metavar="TEXT", help="what the key is for")
    create.add_argument(
        "--expires",
        metavar="WHEN",
        type=_moment,
        help="when it stops working, in every process: an ISO 8601 date or time "
        "(UTC when it names no zone), e.g. 2027-06-30",
    )
    create.add_argument(
        "--graphs",
        metavar="A,B",
        type=_names,
        help="the only graphs whose interrupts it may decide (default: any)",
    )
    create.add_argument(
        "--max-amount",
        metavar="N",
        type=float,
        help="the largest amount it may decide, read from the payload field each graph "
        "names (amount_field); it may not decide a graph that names none",
    )
    create.add_argument(
        "--attestation",
        metavar="TEXT",
        help="the competence its holder attested (e.g. a training); needs --attested-on",
    )
    create.add_argument("--attested-on", metavar="DATE", type=_day, help="when, as YYYY-MM-DD")
    create.set_defaults(handler=keys_create)

    listing = key_commands.add_parser("list", help="every key, newest first, revoked ones too")
    listing.set_defaults(handler=keys_list)

    revoke = key_commands.add_parser(
        "revoke", help="revoke a key for good; it stops working at once, in every process"
    )
    revoke.add_argument("key_id", metavar="KEY_ID", help="the key's id (12 hex digits)")
    revoke.add_argument("--reason", metavar="TEXT", help="why it is revoked")
    revoke.set_defaults(handler=keys_revoke)


def keys_create(args: argparse.Namespace) -> int:
    roles = None if args.config is None else roles_in(Path(args.config))
    with open_store() as store:
        if roles is not None and record_roles(store, roles, local_actor()):
            _say(f"Recorded the roles of {args.config}: {', '.join(roles.names())}.")
        info, raw = Keyring(store).create(
            args.principal,
            args.role,
            actor=local_actor(),
            note=args.note,
            expires_at=args.expires,
            graphs=args.graphs,
            max_amount=args.max_amount,
            attestation_text=args.attestation,
            attested_on=args.attested_on,
        )
    until = f", valid until {_when(info.expires_at)} UTC" if info.expires_at else ""
    _say(f"Created key {info.key_id} for {info.principal_id} (role {info.role}){until}.")
    details = _details(info)
    if details:
        _say(f"  {details}")
    _say("Store it now: it is shown only this once.")
    _say(raw)
    return 0


def keys_list(_: argparse.Namespace) -> int:
    with open_store(existing=True) as store:
        keys = Keyring(store).list()
    _say(
        f"{'key id':<14} {'principal':<24} {'role':<10} {'created (UTC)':<20} "
        f"{'revoked (UTC)':<20} expires (UTC)"
    )
    for key in keys:
        revoked = _when(key.revoked_at) if key.revoked_at else "-"
        expires = _when(key.expires_at) if key.expires_at else "-"
        _say(
            f"{key.key_id:<14} {key.principal_id:<24} {key.role:<10} "
            f"{_when(key.created_at):<20} {revoked:<20} {expires}"
        )
        details = _details(key)
        if details:
            _say(f"  {details}")
    _say(f"{len(keys)} keys, {sum(k.valid for k in keys)} active")
    return 0


def keys_revoke(args: argparse.Namespace) -> int:
    with open_store(existing=True) as store:
        info = Keyring(store).revoke(args.key_id, actor=local_actor(), reason=args.reason)
    _say(f"Revoked key {info.key_id} of {info.principal_id} (role {info.role}).")
    return 0


def _moment(text: str) -> datetime:
    """An ISO 8601 date or time; UTC when it names no zone."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        msg = f"not an ISO 8601 date or time: {text!r} (e.g. 2027-06-30)"
        raise argparse.ArgumentTypeError(msg) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _names(text: str) -> list[str]:
    """A comma-separated list of graph names."""
    return [name.strip() for name in text.split(",")]


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        msg = f"not a date as YYYY-MM-DD: {text!r}"
        raise argparse.ArgumentTypeError(msg) from None


def _details(key: KeyInfo) -> str:
    """A key's scope and attestation, on the line below it; empty when it has neither."""
    parts = []
    if key.scope is not None and key.scope.graphs is not None:
        parts.append(f"graphs: {', '.join(key.scope.graphs)}")
    if key.scope is not None and key.scope.max_amount is not None:
        parts.append(f"max amount: {key.scope.max_amount:g}")
    if key.attestation is not None:
        parts.append(f"attested: {key.attestation.text} ({key.attestation.attested_on})")
    return "; ".join(parts)


def _when(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
