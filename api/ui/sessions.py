"""Browser sessions over HTTP: the cookie, its flags, and this request's session.

The cookie carries only a random session id (256 bits); the session itself is a row
in the store (`service.sessions.SessionStore`: a hash of the id and the key's id,
never the key), so that every server process on the store knows it and it outlives
a restart. The key it was made with is checked again, through the keyring, on every
request, so a revoked key is refused at once everywhere. Signing out revokes the
session in the store, not just the cookie. Each session's forms carry a CSRF token
derived from its id, the same in every process.
"""

from __future__ import annotations

import hmac

from fastapi import Request, Response

from service.services import Services
from service.sessions import Session, SessionStore, csrf_token_for

SESSION_COOKIE = "holdpoint_session"
SIGN_IN_COOKIE = "holdpoint_sign_in"  # the CSRF token of the sign-in form, before a session
COOKIE_PATH = "/ui"
_UNREAD = object()  # this request has not looked its session up yet


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


def session_store(request: Request) -> SessionStore:
    services: Services = request.app.state.services
    return services.sessions


def current_session(request: Request) -> Session | None:
    """The live session of the request's cookie, or None: read from the store once per
    request (a query; call it from a worker thread, not the event loop, the first time)."""
    found = getattr(request.state, "ui_session", _UNREAD)
    if found is _UNREAD:
        found = session_store(request).get(request.cookies.get(SESSION_COOKIE))
        request.state.ui_session = found
    assert found is None or isinstance(found, Session)
    return found


def forget_session(request: Request) -> None:
    """Revoke the request's session in the store (signing out, or its key was refused)."""
    session_store(request).revoke(request.cookies.get(SESSION_COOKIE))
    request.state.ui_session = None


def page_csrf_token(request: Request) -> str:
    """The CSRF token for the forms of a page: the session's, from its cookie, without a
    query (a cookie that names no live session gets a token no form can use)."""
    cookie = request.cookies.get(SESSION_COOKIE)
    return csrf_token_for(cookie) if cookie else ""


def seems_signed_in(request: Request) -> bool:
    """Whether to offer the signed-in links, without a query on the event loop: the
    session if this request looked it up, else whether it has a session cookie (a stale
    one leads to the sign-in page)."""
    found = getattr(request.state, "ui_session", _UNREAD)
    if found is _UNREAD:
        return bool(request.cookies.get(SESSION_COOKIE))
    return found is not None
