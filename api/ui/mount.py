"""Adding the browser interface to the app: a sub-application mounted at /ui.

A sub-application of its own, so that its pages stay out of the API's
OpenAPI document and route table, while the API's middleware (request log,
input limits) still wraps every request to it. It shares the API's services.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException
from starlette.requests import Request

from api.http.problems import Problem
from api.ui import (
    routes_dashboard,
    routes_decision,
    routes_inbox,
    routes_oidc,
    routes_session,
    routes_thread,
    routes_threads_search,
)
from api.ui.pages import error_page
from service.services import Services

STATIC = Path(__file__).parent / "static"
PREFIX = "/ui"


def ui_app(services: Services) -> FastAPI:
    """The UI's pages, and its CSS and JS under /static (nothing from elsewhere)."""
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    app.state.services = services
    for module in (
        routes_session,
        routes_inbox,
        routes_decision,
        routes_thread,
        routes_dashboard,
        routes_threads_search,
        routes_oidc,
    ):
        app.include_router(module.router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.add_exception_handler(HTTPException, _http_error_page)
    return app


async def _http_error_page(request: Request, error: Exception) -> Response:
    """An unknown page (404) or method (405) under /ui, as a page."""
    assert isinstance(error, HTTPException)
    if error.status_code == 404:
        return error_page(request, Problem(404, f"No page {request.url.path} here"))
    return error_page(request, Problem(error.status_code, str(error.detail)))


def install_ui(app: FastAPI, services: Services) -> None:
    """Serve the UI under /ui (and send /ui itself to the inbox)."""

    async def to_inbox(_: Request) -> RedirectResponse:
        return RedirectResponse(f"{PREFIX}/inbox", status_code=303)

    app.add_route(PREFIX, to_inbox, include_in_schema=False)
    app.mount(PREFIX, ui_app(services))
