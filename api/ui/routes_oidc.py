"""Signing in with an OpenID Connect provider: the authorization code flow with PKCE.

`/ui/oidc/start` keeps a new sign-in in the store (its PKCE verifier, nonce and the page
to return to, under the hash of its `state`: `service.sign_ins`), so that the callback
may land on any server process, and sends the browser to the provider. The `state`
is also in a short-lived cookie of its own, SameSite=Lax (the provider's redirect back
is a cross-site navigation, which a Strict cookie would not follow): the callback
accepts only the state this browser started with, so that no one can make a victim
sign in as the attacker (login CSRF). `/ui/oidc/callback` takes the sign-in once,
exchanges the code with the verifier, checks the ID token (`service.oidc_client`), maps
its claims to a principal and role (`api.ui.oidc_identity`), and opens a session.
Every refusal is recorded as the API records its own (and, as there, an address that
sends too many gets 429, recorded once), and shown on the sign-in page.

The session cookie is SameSite=Strict, so the browser would not send it on the rest of
the provider's redirect chain: the callback answers with a short page that goes on
to the page asked for, a navigation of this site's own.
"""

from __future__ import annotations

import secrets
from urllib.parse import quote

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse
from starlette.concurrency import run_in_threadpool

from api.http.auth import note, refuse, unauthenticated
from api.http.deps import ServicesDep
from api.http.problems import Problem
from api.ui.oidc_identity import identity_of
from api.ui.pages import PageRoute, render
from api.ui.routes_session import safe_next, sign_in_page
from api.ui.sessions import (
    COOKIE_PATH,
    SESSION_COOKIE,
    SIGN_IN_COOKIE,
    clear_cookie,
    forget_session,
    session_store,
    set_cookie,
)
from domain.errors import AuthenticationError, SignInRefusedError
from service.oidc_client import OidcClient, SignInError, pkce_pair
from service.services import Services
from service.sessions import Identity
from service.sign_ins import SIGN_IN_SECONDS, PendingSignIn

router = APIRouter(route_class=PageRoute)
STATE_COOKIE = "holdpoint_oidc_state"
STATE_COOKIE_PATH = f"{COOKIE_PATH}/oidc"


def _client(services: Services) -> OidcClient:
    if services.oidc is None:
        raise Problem(404, "This server signs in with API keys only: no [oidc] provider is set")
    return services.oidc


@router.get("/oidc/start")
def start(request: Request, services: ServicesDep) -> Response:
    """To the provider's sign-in, with a new state, nonce and PKCE challenge."""
    client = _client(services)
    next_page = safe_next(request.query_params.get("next"))
    state, nonce = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    verifier, challenge = pkce_pair()
    try:
        location = client.authorization_url(state, nonce, challenge)
    except SignInError as error:
        return sign_in_page(request, 502, f"Cannot sign in with {_name(services)}: {error}")
    services.sign_ins.begin(state, PendingSignIn(verifier, nonce, next_page))
    response = RedirectResponse(location, status_code=303)
    response.set_cookie(
        STATE_COOKIE,
        state,
        max_age=SIGN_IN_SECONDS,
        path=STATE_COOKIE_PATH,
        secure=True,
        httponly=True,
        samesite="lax",
    )
    return response


@router.get("/oidc/callback")
def callback(request: Request, services: ServicesDep) -> Response:
    """The provider's answer: a session for the principal and role its ID token gives."""
    client = _client(services)
    try:
        identity, next_page = _signed_in(request, services, client)
    except AuthenticationError as error:
        if error.reason == "wrong_role":
            status = refuse(services, request, None, 403, error.reason, str(error)).status
        else:  # as the API's 401s: recorded, or 429 once an address sends too many
            status = unauthenticated(services, request, error).status
        response = sign_in_page(request, status, f"Not signed in: {error}")
        response.delete_cookie(STATE_COOKIE, path=STATE_COOKIE_PATH, secure=True, httponly=True)
        return response
    forget_session(request)  # a new session id at each sign-in
    session = session_store(request).open(identity=identity)
    note(request, principal=identity.principal, role=identity.role)
    response = render(
        request,
        "signed_in.html",
        next_page=next_page,
        identity=identity,
        provider=_name(services),
        csrf_token="",
    )
    set_cookie(response, SESSION_COOKIE, session.session_id)
    clear_cookie(response, SIGN_IN_COOKIE)
    response.delete_cookie(STATE_COOKIE, path=STATE_COOKIE_PATH, secure=True, httponly=True)
    return response


@router.get("/oidc/end-session")
async def end_session(services: ServicesDep) -> Response:
    """Signed out here: now at the provider too (RP-initiated logout), where it offers it."""
    client = _client(services)
    location = await run_in_threadpool(client.end_session_url)
    return RedirectResponse(location or "/ui/signed-out", status_code=303)


@router.get("/signed-out")
def signed_out(services: ServicesDep) -> RedirectResponse:
    """Where the provider sends the browser back after signing out there."""
    message = f"You are signed out of Holdpoint and of {_name(services)}."
    return RedirectResponse(f"/ui/sign-in?message={quote(message)}", status_code=303)


def _signed_in(request: Request, services: Services, client: OidcClient) -> tuple[Identity, str]:
    query = request.query_params
    state = query.get("state") or ""
    cookie = request.cookies.get(STATE_COOKIE) or ""
    if not state or not secrets.compare_digest(state.encode(), cookie.encode()):
        msg = (
            "the answer from the provider does not carry the state this browser's sign-in "
            "began with (a forged or stale link): start again"
        )
        raise SignInRefusedError(msg)
    pending = services.sign_ins.take(state)
    if pending is None:
        raise SignInRefusedError("this sign-in has expired or was used already: start again")
    if query.get("error"):
        why = query.get("error_description") or query["error"]
        raise SignInRefusedError(f"{_name(services)} refused the sign-in: {why}")
    issuer = query.get("iss")
    if issuer is not None and issuer != client.settings.issuer:  # RFC 9207: a mix-up
        raise SignInRefusedError(f"the answer comes from {issuer}, not {client.settings.issuer}")
    code = query.get("code")
    if not code:
        raise SignInRefusedError("the provider's answer carries no authorization code")
    try:
        claims = client.sign_in(code, pending.verifier, pending.nonce)
    except SignInError as error:
        raise SignInRefusedError(str(error)) from None
    return identity_of(client.settings, services.settings, claims), pending.next_page


def _name(services: Services) -> str:
    oidc = services.settings.oidc
    return "the provider" if oidc is None else oidc.display_name
