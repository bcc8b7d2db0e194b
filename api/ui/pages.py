"""Rendering pages: the Jinja2 templates, their filters, and errors as HTML pages.

Every UI route is a `PageRoute`: a refusal or an error that the API answers
as problem+json is answered here as a page with the same status and the same
sentence, and a request without a live session goes to the sign-in page.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.routing import APIRoute
from jinja2 import Environment, FileSystemLoader, select_autoescape

from api.http.auth import Permission
from api.http.problems import Problem, from_domain_error
from api.ui.access import SignInRequiredError
from api.ui.sessions import SESSION_COOKIE, clear_cookie, page_csrf_token, seems_signed_in
from domain.errors import HoldpointError

TEMPLATES = Path(__file__).parent / "templates"


def pretty_json(value: Any) -> str:
    """JSON as a person reads it: indented, keys in their order, non-ASCII as is."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def duration(seconds: float | None) -> str:
    """`95` -> `1 min 35 s`: an age or a wait, to the nearest second."""
    if seconds is None:
        return "-"
    whole = round(seconds)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [(days, "d"), (hours, "h"), (minutes, "min"), (secs, "s")]
    shown = [f"{n} {unit}" for n, unit in parts if n][:2]
    return " ".join(shown) or "0 s"


def moment(text: Any) -> str:
    """An ISO 8601 time as `2026-11-30 23:14:09 UTC`."""
    if not text:
        return "-"
    shown = str(text).replace("T", " ")
    for cut in ("+00:00", "Z"):
        shown = shown.removesuffix(cut)
    return f"{shown.split('.')[0]} UTC"


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(pretty_json=pretty_json, duration=duration, moment=moment)
    env.globals["Permission"] = Permission
    return env


ENVIRONMENT = _environment()


def render(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    """The page, with the viewer's CSRF token and the security headers every page has."""
    context.setdefault("csrf_token", page_csrf_token(request))
    html = ENVIRONMENT.get_template(template).render(request=request, **context)
    return HTMLResponse(html, status_code=status_code, headers=PAGE_HEADERS)


# Pages load scripts and styles from this site only; no other site may frame them.
PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def sign_in_redirect(request: Request, message: str | None) -> RedirectResponse:
    target = request.url.path
    if request.url.query:
        target += f"?{request.url.query}"
    location = f"/ui/sign-in?next={quote(target, safe='')}"
    if message:
        location += f"&message={quote(message, safe='')}"
    response = RedirectResponse(location, status_code=303)
    if message:
        clear_cookie(response, SESSION_COOKIE)
    return response


def error_page(request: Request, problem: Problem) -> HTMLResponse:
    response = render(
        request,
        "error.html",
        status_code=problem.status,
        title=_TITLES.get(problem.status, "Something went wrong"),
        detail=problem.detail,
        signed_in=seems_signed_in(request),
    )
    for name, value in (problem.headers or {}).items():
        if name.lower() != "www-authenticate":
            response.headers[name] = value
    return response


_TITLES = {
    400: "Bad request",
    403: "Not allowed",
    404: "Not found",
    409: "Already decided or changed",
    413: "Too large",
    415: "Unsupported form",
    422: "Invalid input",
    429: "Too many requests",
    503: "Unavailable",
}


class PageRoute(APIRoute):
    """A route whose errors are pages, not problem+json."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def page_handler(request: Request) -> Response:
            try:
                return await handler(request)
            except SignInRequiredError as error:
                return sign_in_redirect(request, error.message)
            except Problem as problem:
                return error_page(request, problem)
            except HoldpointError as error:
                return error_page(request, from_domain_error(error))
            except RequestValidationError as error:
                fields = "; ".join(
                    f"{'.'.join(str(p) for p in e.get('loc', ())[1:])}: {e.get('msg')}"
                    for e in error.errors()
                )
                return error_page(request, Problem(422, f"Invalid input: {fields}"))

        return page_handler
