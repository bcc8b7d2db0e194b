"""Reading a posted form, and refusing one without its CSRF token or from another site.

Forms are `application/x-www-form-urlencoded` (no multipart: no file is
uploaded), which the input-limits middleware passes through unread.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

from fastapi import Request

from api.http.auth import refuse
from api.http.problems import Problem
from api.ui.sessions import tokens_match
from domain.access.identity import Principal
from service.services import Services

CSRF_FIELD = "csrf_token"
CSRF_MESSAGE = (
    "This form was refused: its security token (CSRF) is missing or out of date. "
    "Go back, reload the page and send the form again."
)


async def read_form(request: Request) -> dict[str, str]:
    """The form's fields (the first value of each)."""
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media != "application/x-www-form-urlencoded":
        msg = "This page takes a form (application/x-www-form-urlencoded); nothing was recorded"
        raise Problem(415, msg, code="unsupported-media-type")
    body = await request.body()
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise Problem(400, "The form is not valid UTF-8", code="bad-form") from None
    fields: dict[str, str] = {}
    for name, value in parse_qsl(text, keep_blank_values=True):
        fields.setdefault(name, value)
    return fields


def same_origin(request: Request) -> bool:
    """False when the browser says the form came from another site (its Origin header).

    The origin's host must be the request's Host, or X-Forwarded-Host behind a proxy
    that rewrites Host.
    """
    origin = request.headers.get("origin")
    if origin is None:
        return True  # an older browser, or a client that is not a browser: the token decides
    sent = urlsplit(origin)
    hosts = {request.headers.get("host", ""), request.headers.get("x-forwarded-host", "")}
    return sent.scheme in ("http", "https") and sent.netloc in hosts - {""}


def check_form(
    services: Services,
    request: Request,
    form: dict[str, str],
    expected: str,
    principal: Principal | None,
) -> None:
    """403, recorded, unless the form carries `expected` and comes from this site."""
    if same_origin(request) and tokens_match(form.get(CSRF_FIELD), expected):
        return
    # Recorded as "forbidden": the domain's refusal reasons are a closed list (no "csrf").
    raise refuse(services, request, principal, 403, "forbidden", CSRF_MESSAGE)


def page_size(text: str | None, default: int, maximum: int) -> int:
    """A page's `limit` from a query string: `default` if none, 422 unless 1 to `maximum`."""
    if not text:
        return default
    if not text.isdigit() or not 1 <= int(text) <= maximum:
        msg = f"Invalid limit {text!r}: a whole number from 1 to {maximum}"
        raise Problem(422, msg)
    return int(text)
