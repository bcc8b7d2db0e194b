"""Cross-origin requests from browser pages (CORS), for the origins the server allows.

A page on another origin (Agent Chat UI, Agent Inbox, a team's own app) calls the API
with its key in a header, so the browser first asks (a preflight `OPTIONS`) and then
shows the page a response only when it names the page's origin. Nothing is allowed by
default (`cors_allow_origins` in `[server]` of a holdpoint.toml, or
`HOLDPOINT_CORS_ALLOW_ORIGINS`); the server says at start what it allows.

Credentials (cookies) are never allowed across origins: the API takes its key from a
header, and the browser interface's session cookie (api/ui) stays same-origin.
"""

from __future__ import annotations

import structlog
from fastapi import FastAPI
from starlette.middleware.cors import CORSMiddleware

from api.http.positions import POSITION_HEADER
from service.settings import ANY_ORIGIN

log = structlog.get_logger()

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
# What a page may read of a response beyond the basic headers.
EXPOSED_HEADERS = (
    "Content-Location",
    "Location",
    "Retry-After",
    POSITION_HEADER,
    "X-Pagination-Next",
)
PREFLIGHT_MAX_AGE = 600  # seconds a browser may keep a preflight's answer


def install_cors(app: FastAPI, origins: tuple[str, ...]) -> None:
    """Answer cross-origin requests from `origins` (none: the middleware is left out, and
    a browser refuses every cross-origin call)."""
    if not origins:
        log.info("cors", allowed="none", how="set cors_allow_origins to let browser pages call")
        return
    if ANY_ORIGIN in origins:
        log.warning("cors", allowed="any origin", how="every page may call with a key it holds")
    else:
        log.info("cors", allowed=list(origins))
    app.add_middleware(
        CORSMiddleware,
        allow_origins=list(origins),
        allow_methods=list(METHODS),
        allow_headers=["*"],  # the key's (authorization, x-api-key) and the SDKs' own
        allow_credentials=False,
        expose_headers=list(EXPOSED_HEADERS),
        max_age=PREFLIGHT_MAX_AGE,
    )
