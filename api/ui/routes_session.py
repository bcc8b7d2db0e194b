"""Signing in with an API key, and signing out (of this session, or of all of them).

A session is a row in the store (`service.sessions`), which every server process
reads: signing in on one and signing out on another both hold everywhere. The sign-in
form is protected like every other form: before there is a
session, its CSRF token is a random value in a short-lived cookie of its own
(double submit), and the browser must say the form came from this site.
A wrong key is refused and recorded, as the API records it.
"""

from __future__ import annotations

import secrets

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse
from starlette.concurrency import run_in_threadpool

from api.http.auth import note, refuse
from api.http.deps import ServicesDep
from api.ui.forms import check_form, read_form
from api.ui.pages import PageRoute, render
from api.ui.sessions import (
    SESSION_COOKIE,
    SIGN_IN_COOKIE,
    clear_cookie,
    current_session,
    forget_session,
    session_store,
    set_cookie,
)
from domain.access.identity import Principal
from domain.errors import AuthenticationError

router = APIRouter(route_class=PageRoute)
HOME = "/ui/inbox"
SIGN_IN_SECONDS = 3600
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1", "[::1]")  # where browsers keep Secure cookies


def safe_next(target: str | None) -> str:
    """Where to go after signing in: a page of this UI, never another site."""
    if target and target.startswith("/ui/") and not target.startswith("/ui//"):
        return target
    return HOME


def sign_in_page(
    request: Request, status: int = 200, error: str | None = None, next_page: str = HOME
) -> Response:
    token = secrets.token_urlsafe(32)
    oidc = request.app.state.services.settings.oidc
    response = render(
        request,
        "sign_in.html",
        status_code=status,
        csrf_token=token,
        error=error,
        message=request.query_params.get("message"),
        next_page=next_page,
        plain_http=request.url.scheme == "http" and request.url.hostname not in LOCAL_HOSTS,
        provider=None if oidc is None else oidc.display_name,
        provider_sign_out=oidc is not None and request.query_params.get("provider") == "yes",
    )
    set_cookie(response, SIGN_IN_COOKIE, token, max_age=SIGN_IN_SECONDS)
    return response


@router.get("/")
def ui_root() -> RedirectResponse:
    return RedirectResponse(HOME, status_code=303)


@router.get("/sign-in")
def get_sign_in(request: Request) -> Response:
    if current_session(request) is not None and not request.query_params.get("message"):
        return RedirectResponse(safe_next(request.query_params.get("next")), status_code=303)
    return sign_in_page(request, next_page=safe_next(request.query_params.get("next")))


@router.post("/sign-in")
async def post_sign_in(request: Request, services: ServicesDep) -> Response:
    form = await read_form(request)
    next_page = safe_next(form.get("next"))
    check_form(services, request, form, request.cookies.get(SIGN_IN_COOKIE) or "", None)
    api_key = form.get("api_key", "").strip()
    try:
        principal: Principal = await run_in_threadpool(services.keyring.authenticate, api_key)
    except AuthenticationError as error:
        await run_in_threadpool(refuse, services, request, None, 401, error.reason, str(error))
        return sign_in_page(request, 401, f"Not signed in: {error}", next_page)
    await run_in_threadpool(forget_session, request)  # a new session id at each sign-in
    session = await run_in_threadpool(session_store(request).open, principal.key_id)
    response = RedirectResponse(next_page, status_code=303)
    set_cookie(response, SESSION_COOKIE, session.session_id)
    clear_cookie(response, SIGN_IN_COOKIE)
    note(request, principal=principal.id, role=principal.role)
    return response


@router.post("/sign-out")
async def post_sign_out(request: Request, services: ServicesDep) -> Response:
    """End this session (or, with `everywhere`, every session of the same signer) in the
    store, for every process at once; after a provider's session, offer to sign out
    there too, where the provider has an end_session_endpoint."""
    form = await read_form(request)
    session = await run_in_threadpool(current_session, request)
    location = "/ui/sign-in?message=You+are+signed+out."
    if session is not None:
        check_form(services, request, form, session.csrf_token, None)
        if form.get("everywhere") == "yes":
            count = await run_in_threadpool(session_store(request).revoke_all_of, session)
            location = f"/ui/sign-in?message=You+are+signed+out+of+{count}+sessions."
        await run_in_threadpool(forget_session, request)
        oidc = services.oidc
        if session.identity is not None and oidc is not None:
            location += "&provider=yes" if await run_in_threadpool(oidc.end_session_url) else ""
    response = RedirectResponse(location, status_code=303)
    clear_cookie(response, SESSION_COOKIE)
    return response
