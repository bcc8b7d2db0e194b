"""Browser sessions in the store's own database, so that every server process knows them.

A session is a row of `holdpoint_ui_sessions`, beside the read models (the same SQLite
file or PostgreSQL schema as the events). The browser holds a random session id (256
bits) in a cookie; the row holds only what cannot be turned back into it or into a key:

- `session_hash`: the SHA-256 of the session id, the primary key. Whoever reads the
  table learns no cookie that would work.
- `key_id`: the id of the API key signed in with (the keyring's 12 hex digits), never
  the key or its secret. Every request checks that key again through the keyring
  (`principal_of`), so revoking it ends its sessions in every process at once.
- `principal`, `role`, `issuer`: who a session signed in through an OpenID Connect
  provider is (its claims, mapped: `api.ui.oidc_identity`), and that provider; NULL for an API
  key's session, whose `key_id` is then '' (no key: the claims are what was checked).
- `sign_in`: a sign-in in progress with a provider, not a session: its PKCE verifier,
  nonce and the page to return to (JSON), keyed by the hash of its `state`
  (`service.sign_ins`). Never a live session.
- `created_at`, `last_seen_at`, `expires_at`, `revoked_at`: seconds since the epoch.
  `expires_at` is the idle timeout (`IDLE_SECONDS` after the last recorded request)
  capped by the absolute lifetime (`LIFETIME_SECONDS` after sign-in). A request records
  itself at most once every `TOUCH_SECONDS` per session, not on every page, so the idle
  timeout counts from the last request within a minute. Signing out sets `revoked_at`.

The CSRF token of a session's forms is derived, not stored: an HMAC of the session id
(`csrf_token_for`). Any process that holds the cookie's id computes the same token;
the table's hash does not give it. Neither the id nor the token is ever logged.

Rows end when they expire: each sign-in deletes the expired ones. A key (or a
provider's principal) keeps at most `MAX_SESSIONS_PER_KEY` live sessions; a sign-in
beyond that ends its least recently seen one.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import astuple, dataclass, replace
from typing import Any

from domain.access.identity import Principal
from domain.access.keyring import Keyring
from domain.errors import KeyExpiredError, KeyRevokedError
from projections.database import Cursor, Database
from projections.privileges import TablesNotReadyError, schema_of
from service.errors import SessionNotFoundError

SESSIONS = "holdpoint_ui_sessions"
IDLE_SECONDS = 8 * 3600
LIFETIME_SECONDS = 7 * 24 * 3600
TOUCH_SECONDS = 60
MAX_SESSIONS_PER_KEY = 100
HANDLE_LENGTH = 16  # hex digits of the hash that name a session to an operator
MAX_COOKIE_LENGTH = 256  # a session id is 43 characters; longer is not one of ours
_CSRF_PURPOSE = b"holdpoint ui csrf token"
_COLUMNS = (
    "session_hash, key_id, created_at, last_seen_at, expires_at, revoked_at, "
    "principal, role, issuer"
)
# Added since the table was first made: `create_tables` adds the missing ones.
ADDED_COLUMNS = ("principal", "role", "issuer", "sign_in")


def create_tables(cursor: Cursor, db: Database) -> None:
    """The sessions table and its indexes, if missing."""
    sessions = db.table(SESSIONS)
    cursor.execute(
        f"CREATE TABLE IF NOT EXISTS {sessions} ("
        "session_hash TEXT PRIMARY KEY, key_id TEXT NOT NULL, "
        "created_at DOUBLE PRECISION NOT NULL, last_seen_at DOUBLE PRECISION NOT NULL, "
        "expires_at DOUBLE PRECISION NOT NULL, revoked_at DOUBLE PRECISION)"
    )
    _add_missing_columns(cursor, db, sessions)
    cursor.execute(f"CREATE INDEX IF NOT EXISTS {SESSIONS}_key ON {sessions} (key_id)")
    cursor.execute(
        f"CREATE INDEX IF NOT EXISTS {SESSIONS}_principal ON {sessions} (issuer, principal)"
    )
    cursor.execute(f"CREATE INDEX IF NOT EXISTS {SESSIONS}_expiry ON {sessions} (expires_at)")


def _add_missing_columns(cursor: Cursor, db: Database, table: str) -> None:
    """The columns added since the table was first made, on a table made before them
    (looked up first: no DDL, and no lock, on a table that has them)."""
    for column in missing_columns(cursor, db):
        cursor.execute(f"ALTER TABLE {table} ADD COLUMN {column} TEXT")


def missing_columns(cursor: Cursor, db: Database) -> list[str]:
    """The columns of `ADDED_COLUMNS` that the table lacks (a table made before them)."""
    if db.dialect == "sqlite":
        cursor.execute(f"SELECT name FROM pragma_table_info('{SESSIONS}')")
    else:
        cursor.execute(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = %s AND table_name = %s",
            (schema_of(db), SESSIONS),
        )
    present = {str(row[0]) for row in cursor.fetchall()}
    return [column for column in ADDED_COLUMNS if column not in present]


def session_hash(session_id: str) -> str:
    """What the table keeps of a session id: its SHA-256, in hex."""
    return hashlib.sha256(session_id.encode()).hexdigest()


def csrf_token_for(session_id: str) -> str:
    """The CSRF token of a session's forms: the same in every process, from the id alone."""
    mac = hmac.new(session_id.encode(), _CSRF_PURPOSE, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).rstrip(b"=").decode()


@dataclass(frozen=True)
class Session:
    """A live session, as its cookie's holder has it: `session_id` is the cookie's value,
    known to this request only (the store has its hash)."""

    session_id: str
    key_id: str
    created_at: float
    last_seen_at: float
    expires_at: float
    identity: Identity | None = None  # who, for a session signed in with a provider

    @property
    def csrf_token(self) -> str:
        return csrf_token_for(self.session_id)

    def __repr__(self) -> str:  # never the id, in a log or a traceback
        return f"Session(key_id={self.key_id!r}, expires_at={self.expires_at!r})"


@dataclass(frozen=True)
class Identity:
    """Who a session signed in through an OpenID Connect provider is: the principal and
    role its claims gave, and the provider (its issuer)."""

    principal: str
    role: str
    issuer: str


@dataclass(frozen=True)
class SessionInfo:
    """A session as an operator may see it: a handle (the start of its hash), never its id."""

    handle: str
    key_id: str
    created_at: float
    last_seen_at: float
    expires_at: float
    revoked_at: float | None
    identity: Identity | None = None

    def live(self, now: float) -> bool:
        return self.revoked_at is None and self.expires_at > now


def principal_of(keyring: Keyring, key_id: str) -> Principal:
    """Who a session's key belongs to, read from the store now; raises UnknownKeyError
    (the key is gone or damaged), KeyRevokedError or KeyExpiredError."""
    info = keyring.get(key_id)
    if info.revoked_at is not None:
        raise KeyRevokedError(key_id, info.revoked_at.isoformat())
    if info.expires_at is not None and info.expired():
        raise KeyExpiredError(key_id, info.expires_at.isoformat())
    return info.principal()


class SessionStore:
    """The sessions of one store, through its database; safe to share between threads."""

    def __init__(
        self,
        db: Database,
        *,
        idle_seconds: float = IDLE_SECONDS,
        lifetime_seconds: float = LIFETIME_SECONDS,
        clock: Callable[[], float] = time.time,
        create: bool = True,
    ) -> None:
        self.db = db
        self.idle_seconds = idle_seconds
        self.lifetime_seconds = lifetime_seconds
        self._clock = clock
        self._table = db.table(SESSIONS)
        if create:
            with db.transaction() as cursor:
                create_tables(cursor, db)
            return
        with db.transaction(write=False) as cursor:  # a role that may not add them
            lacking = missing_columns(cursor, db)
        if lacking:
            msg = (
                f"The table {SESSIONS} has no column {lacking[0]} (sign-in with a provider "
                "added it): run `holdpoint db init` as the tables' owner"
            )
            raise TablesNotReadyError(msg)

    def open(self, key_id: str = "", identity: Identity | None = None) -> Session:
        """A new session for a key that was just authenticated, or for the `identity` a
        provider's ID token was just checked for (then `key_id` is '')."""
        session_id = secrets.token_urlsafe(32)
        now = self._clock()
        expires = now + min(self.idle_seconds, self.lifetime_seconds)
        who = (None, None, None) if identity is None else astuple(identity)
        with self.db.transaction() as cursor:
            cursor.execute(f"DELETE FROM {self._table} WHERE expires_at <= %s", (now,))
            cursor.execute(
                f"INSERT INTO {self._table} ({_COLUMNS}) "
                "VALUES (%s, %s, %s, %s, %s, NULL, %s, %s, %s)",
                (session_hash(session_id), key_id, now, now, expires, *who),
            )
            self._end_beyond_limit(cursor, key_id, identity, now)
        return Session(session_id, key_id, now, now, expires, identity)

    def get(self, session_id: str | None) -> Session | None:
        """The live session of this id (not expired, not revoked), or None; records the
        request when the last one recorded is `TOUCH_SECONDS` old or more."""
        if not session_id or len(session_id) > MAX_COOKIE_LENGTH:
            return None
        digest, now = session_hash(session_id), self._clock()
        with self.db.transaction(write=False) as cursor:
            cursor.execute(
                "SELECT key_id, created_at, last_seen_at, expires_at, principal, role, issuer "
                f"FROM {self._table} WHERE session_hash = %s AND revoked_at IS NULL "
                "AND expires_at > %s AND sign_in IS NULL",
                (digest, now),
            )
            row = cursor.fetchone()
        if row is None:
            return None
        session = Session(
            session_id, str(row[0]), float(row[1]), float(row[2]), float(row[3]), _identity(row[4:])
        )
        if now - session.last_seen_at < TOUCH_SECONDS:
            return session
        expires = min(now + self.idle_seconds, session.created_at + self.lifetime_seconds)
        with self.db.transaction() as cursor:  # once a minute: another request may beat us
            cursor.execute(
                f"UPDATE {self._table} SET last_seen_at = %s, expires_at = %s "
                "WHERE session_hash = %s AND revoked_at IS NULL AND last_seen_at < %s",
                (now, expires, digest, now - TOUCH_SECONDS),
            )
        return replace(session, last_seen_at=now, expires_at=expires)

    def revoke(self, session_id: str | None) -> bool:
        """End a session (signing out); whether it was live."""
        if not session_id or len(session_id) > MAX_COOKIE_LENGTH:
            return False
        return self._revoke("session_hash = %s", (session_hash(session_id),)) > 0

    def revoke_key(self, key_id: str) -> int:
        """End every live session of a key; how many there were."""
        return self._revoke("key_id = %s AND issuer IS NULL", (key_id,))

    def revoke_all_of(self, session: Session) -> int:
        """End every live session of the same signer as `session` (signing out of all
        of them): the same key's, or the same principal's with the same provider."""
        if session.identity is None:
            return self.revoke_key(session.key_id)
        identity = session.identity
        return self._revoke("issuer = %s AND principal = %s", (identity.issuer, identity.principal))

    def revoke_handle(self, handle: str) -> SessionInfo:
        """End the session whose handle (the start of its hash, as `list` shows it) is
        `handle`; raises SessionNotFoundError unless exactly one session matches."""
        found = self._by_handle(handle)
        self._revoke("session_hash = %s", (found,))
        with self.db.transaction(write=False) as cursor:
            cursor.execute(
                f"SELECT {_COLUMNS} FROM {self._table} WHERE session_hash = %s", (found,)
            )
            return _info(cursor.fetchone())

    def list(self, *, include_ended: bool = False) -> list[SessionInfo]:
        """Sessions, most recently seen first: the live ones, or every row still kept."""
        now = self._clock()
        where = "WHERE sign_in IS NULL"
        if not include_ended:
            where += " AND revoked_at IS NULL AND expires_at > %s"
        with self.db.transaction(write=False) as cursor:
            cursor.execute(
                f"SELECT {_COLUMNS} FROM {self._table} {where} "
                "ORDER BY last_seen_at DESC, session_hash",
                () if include_ended else (now,),
            )
            rows = cursor.fetchall()
        return [_info(row) for row in rows]

    def close(self) -> None:
        self.db.close()

    def _revoke(self, where: str, params: tuple[Any, ...]) -> int:
        now = self._clock()
        with self.db.transaction() as cursor:
            cursor.execute(
                f"UPDATE {self._table} SET revoked_at = %s "
                f"WHERE {where} AND revoked_at IS NULL AND expires_at > %s",
                (now, *params, now),
            )
            return max(cursor.rowcount, 0)

    def _by_handle(self, handle: str) -> str:
        text = handle.strip().lower()
        if not text or any(c not in "0123456789abcdef" for c in text):
            msg = f"No session {handle!r}: a session is named by the hex digits `list` shows"
            raise SessionNotFoundError(msg)
        with self.db.transaction(write=False) as cursor:
            cursor.execute(
                f"SELECT session_hash FROM {self._table} WHERE session_hash LIKE %s "
                "AND sign_in IS NULL LIMIT 2",
                (text + "%",),
            )
            rows = cursor.fetchall()
        if len(rows) != 1:
            which = "No session" if not rows else "More than one session"
            msg = f"{which} starts with {handle!r}: give the handle `holdpoint sessions list` shows"
            raise SessionNotFoundError(msg)
        return str(rows[0][0])

    def _end_beyond_limit(
        self, cursor: Cursor, key_id: str, identity: Identity | None, now: float
    ) -> None:
        params: tuple[str, ...]
        if identity is None:
            signer, params = "key_id = %s AND issuer IS NULL", (key_id,)
        else:
            signer, params = "issuer = %s AND principal = %s", (identity.issuer, identity.principal)
        cursor.execute(
            f"SELECT session_hash FROM {self._table} WHERE {signer} AND revoked_at IS NULL "
            "AND expires_at > %s ORDER BY last_seen_at DESC, created_at DESC",
            (*params, now),
        )
        beyond = [(now, row[0]) for row in cursor.fetchall()[MAX_SESSIONS_PER_KEY:]]
        if beyond:
            cursor.executemany(
                f"UPDATE {self._table} SET revoked_at = %s WHERE session_hash = %s", beyond
            )


def _info(row: Any) -> SessionInfo:
    return SessionInfo(
        handle=str(row[0])[:HANDLE_LENGTH],
        key_id=str(row[1]),
        created_at=float(row[2]),
        last_seen_at=float(row[3]),
        expires_at=float(row[4]),
        revoked_at=None if row[5] is None else float(row[5]),
        identity=_identity(row[6:9]),
    )


def _identity(columns: Any) -> Identity | None:
    principal, role, issuer = columns
    return None if issuer is None else Identity(str(principal), str(role), str(issuer))
