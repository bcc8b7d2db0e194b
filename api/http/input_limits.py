"""What a request may carry, checked before any route sees it.

- A JSON body (no content type, `application/json` or `application/*+json`,
  as FastAPI parses them) must be UTF-8 (else 400) and pass
  `domain.record.json_limits`: at most `MAX_JSON_DEPTH` levels of nesting, no
  U+0000 in a string, no lone surrogate (else 422). A 100,000-level body is
  answered in about a millisecond: the parser never sees it.
- The path and the query string must hold no control character (U+0000 to
  U+001F, U+007F) once percent-decoded (else 422): no id or filter has one,
  PostgreSQL cannot compare text with U+0000, and a log line must not carry
  a line break that a caller chose.
- A thread id that the API records (`POST /threads`, or a run with
  `if_not_exists: create`) follows `THREAD_ID_RULE`, so that every client
  can address it in a URL path (`thread_id_problem`).

The size of a body is limited before this, by `api.http.request_log`.
"""

from __future__ import annotations

import re
from urllib.parse import unquote_to_bytes

from starlette.requests import Request

from api.http.problems import Problem, respond
from api.http.request_log import ASGIApp, Receive, Scope, Send, replay_body
from domain.record.json_limits import MAX_JSON_DEPTH, json_text_problem
from domain.record.thread_ids import thread_id_problem

_CONTROL = re.compile(rb"[\x00-\x1f\x7f]")
_CONTROL_TEXT = re.compile(r"[\x00-\x1f\x7f]")
_BODY_METHODS = ("POST", "PUT", "PATCH")


def check_thread_id(thread_id: str) -> str:
    """A pydantic validator: the thread id, or ValueError naming the rule."""
    problem = thread_id_problem(thread_id)
    if problem is not None:
        raise ValueError(problem)
    return thread_id


def is_json(headers: list[tuple[bytes, bytes]]) -> bool:
    """Whether FastAPI would parse the body as JSON: no content type, or a JSON one."""
    value = next((v for k, v in headers if k.lower() == b"content-type"), None)
    if not value:
        return True
    media = value.split(b";", 1)[0].strip().lower()
    return media == b"application/json" or (
        media.startswith(b"application/") and media.endswith(b"+json")
    )


def body_problem(body: bytes, max_depth: int = MAX_JSON_DEPTH) -> Problem | None:
    """A 400 or 422 for a JSON body that may not reach a route, or None."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        msg = f"The request body is not valid UTF-8 (byte {error.start}), as JSON must be"
        return Problem(400, msg, code="bad-json")
    problem = json_text_problem(text, max_depth)
    if problem is None:
        return None
    return Problem(422, f"Invalid body: {problem}", code="invalid-request")


def url_problem(scope: Scope) -> Problem | None:
    """A 422 when the path or a query value holds a control character, or None."""
    path = scope.get("path", "")
    if _CONTROL_TEXT.search(path):
        msg = "Invalid path: it holds a control character (U+0000 to U+001F or U+007F)"
        return Problem(422, msg, code="invalid-request")
    query = scope.get("query_string", b"")
    if b"%" in query or _CONTROL.search(query):
        decoded = unquote_to_bytes(query.replace(b"+", b" "))
        if _CONTROL.search(decoded):
            msg = "Invalid query: it holds a control character (U+0000 to U+001F or U+007F)"
            return Problem(422, msg, code="invalid-request")
    return None


class InputLimitsMiddleware:
    """Answers 400 or 422 for a request that breaks the rules above; passes the rest."""

    def __init__(self, app: ASGIApp, *, max_depth: int = MAX_JSON_DEPTH) -> None:
        self.app = app
        self.max_depth = max_depth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        problem = url_problem(scope)
        if problem is None and scope["method"] in _BODY_METHODS and is_json(scope["headers"]):
            body = await _read(receive)
            problem = body_problem(body, self.max_depth) if body.strip() else None
            receive = replay_body(body, receive)
        if problem is None:
            await self.app(scope, receive, send)
            return
        await respond(problem, Request(scope))(scope, receive, send)


async def _read(receive: Receive) -> bytes:
    """The whole body (its size is already bounded by `api.http.request_log`)."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks)
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)
