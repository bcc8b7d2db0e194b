"""Browser sessions: a random id in an HTTP-only cookie, the API key on the server.

The cookie carries only a random session id (256 bits); the key it stands for
stays in this process's memory and is checked again, through the keyring, on
every request, so a revoked key is refused at once. Signing out deletes the
session here, not just the cookie. Each session has its own CSRF token, which
every form carries back. Sessions do not survive a restart: sign in again.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from dataclasses import dataclass, field

from fastapi import Request, Response

SESSION_COOKIE = "holdpoint_session"
SIGN_IN_COOKIE = "holdpoint_sign_in"  # the CSRF token of the sign-in form, before a session
COOKIE_PATH = "/ui"
IDLE_SECONDS = 8 * 3600
MAX_SESSIONS = 10_000


@dataclass
class Session:
    """One signed-in browser: its key (server-side only) and the CSRF token of its forms."""

    session_id: str
    api_key: str
    csrf_token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    last_seen: float = field(default_factory=time.monotonic)


class SessionTable:
    """Sessions by id, forgotten after `idle_seconds` without a request."""

    def __init__(self, idle_seconds: float = IDLE_SECONDS, limit: int = MAX_SESSIONS) -> None:
        self.idle_seconds = idle_seconds
        self.limit = limit
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    def open(self, api_key: str) -> Session:
        session = Session(secrets.token_urlsafe(32), api_key)
        with self._lock:
            self._forget_idle()
            if len(self._sessions) >= self.limit:  # the least recently seen goes first
                oldest = min(self._sessions.values(), key=lambda s: s.last_seen)
                del self._sessions[oldest.session_id]
            self._sessions[session.session_id] = session
        return session

    def get(self, session_id: str | None) -> Session | None:
        if not session_id:
            return None
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return None
            now = time.monotonic()
            if now - session.last_seen > self.idle_seconds:
                del self._sessions[session_id]
                return None
            session.last_seen = now
            return session

    def close(self, session_id: str | None) -> None:
        with self._lock:
            self._sessions.pop(session_id or "", None)

    def _forget_idle(self) -> None:
        cutoff = time.monotonic() - self.idle_seconds
        for stale in [s.session_id for s in self._sessions.values() if s.last_seen < cutoff]:
            del self._sessions[stale]


def tokens_match(sent: str | None, expected: str) -> bool:
    """Compared in constant time, so that timing tells nothing about the token."""
    return bool(sent) and hmac.compare_digest(str(sent).encode(), expected.encode())


def set_cookie(response: Response, name: str, value: str, max_age: int | None = None) -> None:
    """Secure (browsers keep it over HTTPS and on localhost), HTTP-only, SameSite=Strict."""
    response.set_cookie(
        name,
        value,
        max_age=max_age,
        path=COOKIE_PATH,
        secure=True,
        httponly=True,
        samesite="strict",
    )


def clear_cookie(response: Response, name: str) -> None:
    response.delete_cookie(name, path=COOKIE_PATH, secure=True, httponly=True, samesite="strict")


def session_table(request: Request) -> SessionTable:
    table: SessionTable = request.app.state.ui_sessions
    return table


def current_session(request: Request) -> Session | None:
    return session_table(request).get(request.cookies.get(SESSION_COOKIE))
