"""`holdpoint sessions list|revoke`: the browser UI's sessions, from the command line.

A session is named by a handle, the first hex digits of the hash the store keeps of
its id (`service.sessions`): never the id, which only the browser's cookie holds.
Revoking ends it in every server process on the store at once. `holdpoint keys
revoke` ends every session of a key as well, since each request checks its key.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from api.cli.options import Commands, UsageError
from domain.access.keyring import Keyring
from domain.errors import UnknownKeyError
from domain.record.store import open_store

if TYPE_CHECKING:
    from service.sessions import SessionInfo, SessionStore


def register(commands: Commands) -> None:
    """Add `sessions` and its subcommands to the `holdpoint` subcommands."""
    sessions = commands.add_parser(
        "sessions",
        help="list and revoke the browser UI's sessions",
        description=(
            "Sessions of the browser UI, kept in the store: a hash of each session id "
            "and the id of the key signed in with, never the key."
        ),
    )
    session_commands = sessions.add_subparsers(
        dest="sessions_command", required=True, metavar="SESSIONS_COMMAND"
    )
    listing = session_commands.add_parser(
        "list", help="the live sessions, most recently seen first"
    )
    listing.add_argument(
        "--all", action="store_true", help="signed-out and expired sessions too, while kept"
    )
    listing.set_defaults(handler=sessions_list)

    revoke = session_commands.add_parser(
        "revoke", help="end a session, or every session of a key, in every process at once"
    )
    revoke.add_argument("handle", nargs="?", metavar="SESSION", help="a handle `list` shows")
    revoke.add_argument("--key", metavar="KEY_ID", help="every live session of this key")
    revoke.set_defaults(handler=sessions_revoke)


def sessions_list(args: argparse.Namespace) -> int:
    with _session_store() as (sessions, keyring):
        found = sessions.list(include_ended=args.all)
        now = datetime.now(UTC).timestamp()
        _say(
            f"{'session':<18} {'key id':<14} {'principal':<20} {'signed in (UTC)':<20} "
            f"{'last seen (UTC)':<20} {'expires (UTC)':<20} state"
        )
        for info in found:
            principal, state = _principal_and_state(keyring, info, now)
            _say(
                f"{info.handle:<18} {info.key_id or '(oidc)':<14} {principal:<20} "
                f"{_when(info.created_at):<20} {_when(info.last_seen_at):<20} "
                f"{_when(info.expires_at):<20} {state}"
            )
    _say(f"{len(found)} sessions")
    return 0


def sessions_revoke(args: argparse.Namespace) -> int:
    if (args.handle is None) == (args.key is None):
        msg = "Name one session (SESSION, a handle `holdpoint sessions list` shows) or --key"
        raise UsageError(msg)
    with _session_store() as (sessions, _):
        if args.key is not None:
            count = sessions.revoke_key(args.key)
            _say(f"Revoked {count} sessions of key {args.key}.")
            return 0
        info = sessions.revoke_handle(args.handle)
    _say(f"Revoked session {info.handle} of key {info.key_id}.")
    return 0


@contextmanager
def _session_store() -> Iterator[tuple[SessionStore, Keyring]]:
    # The read models' database, imported here: the CLI's groups import none at the top.
    from service.read_models import side_tables_for  # noqa: PLC0415
    from service.schema import prepare  # noqa: PLC0415
    from service.sessions import SessionStore  # noqa: PLC0415

    with open_store(existing=True) as store:
        db = side_tables_for(store)  # with create_tables=no: its tables and grants checked
        sessions = SessionStore(db, create=prepare(store, db))
        try:
            yield sessions, Keyring(store)
        finally:
            sessions.close()


def _principal_and_state(keyring: Keyring, info: SessionInfo, now: float) -> tuple[str, str]:
    if info.identity is not None:  # signed in through a provider: no key to look up
        return info.identity.principal, _state(info, now) or "live"
    try:
        key = keyring.get(info.key_id)
    except UnknownKeyError:
        return "-", "key unknown"
    return key.principal_id, _state(info, now) or ("key revoked" if key.revoked else "live")


def _state(info: SessionInfo, now: float) -> str | None:
    if info.revoked_at is not None:
        return "revoked"
    if info.expires_at <= now:
        return "expired"
    return None


def _when(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
