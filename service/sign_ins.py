"""Sign-ins in progress with an OpenID Connect provider, in the store, for any process.

Between sending the browser to the provider and its return to the callback, what the
callback must check is kept server side: the PKCE verifier, the nonce and the page to
return to. It is a row of the sessions table (`service.sessions`, column `sign_in`),
keyed by the SHA-256 of the `state` sent to the provider, so that the process the
browser returns to need not be the one it left from. A row is taken once (read and
deleted in one transaction: a replayed callback finds nothing) and lasts
`SIGN_IN_SECONDS`; expired ones go with the sessions that expire.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

from projections.database import Database
from service.sessions import SESSIONS, session_hash

SIGN_IN_SECONDS = 600


@dataclass(frozen=True)
class PendingSignIn:
    """What the callback checks the provider's answer against."""

    verifier: str
    nonce: str
    next_page: str


class SignIns:
    """The sign-ins in progress of one store."""

    def __init__(self, db: Database, clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self._clock = clock
        self._table = db.table(SESSIONS)

    def begin(self, state: str, pending: PendingSignIn) -> None:
        now = self._clock()
        with self.db.transaction() as cursor:
            cursor.execute(f"DELETE FROM {self._table} WHERE expires_at <= %s", (now,))
            cursor.execute(
                f"INSERT INTO {self._table} (session_hash, key_id, created_at, last_seen_at, "
                "expires_at, sign_in) VALUES (%s, '', %s, %s, %s, %s)",
                (session_hash(state), now, now, now + SIGN_IN_SECONDS, json.dumps(asdict(pending))),
            )

    def take(self, state: str) -> PendingSignIn | None:
        """The sign-in begun with `state`, once; None if there is none (never begun, taken
        already, or expired)."""
        digest, now = session_hash(state), self._clock()
        with self.db.transaction() as cursor:
            cursor.execute(
                f"SELECT sign_in, expires_at FROM {self._table} "
                "WHERE session_hash = %s AND sign_in IS NOT NULL",
                (digest,),
            )
            row = cursor.fetchone()
            if row is None:
                return None
            cursor.execute(
                f"DELETE FROM {self._table} WHERE session_hash = %s AND sign_in IS NOT NULL",
                (digest,),
            )
            if cursor.rowcount != 1 or float(row[1]) <= now:  # another process took it
                return None
        return PendingSignIn(**json.loads(row[0]))
