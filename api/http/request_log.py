"""Every request: an id, a size limit, one log line and its metrics.

A plain ASGI middleware (it wraps streaming responses without buffering
them). The request id is the caller's `x-request-id` when it is sane, else a
new one; it is sent back and bound to every log line of the request. Bodies
over `max_body_bytes` get 413 before the app reads them; the rest of such a
body is read and dropped first (up to `DRAIN_LIMIT` bytes), because a server
that answers and closes while the client still sends makes the client see a
connection reset instead of the 413. The log line has
the request id, method, route, status, duration, principal, thread and run;
never a key, a query string or a body.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import structlog

from api.http.problems import MEDIA_TYPE, Problem
from service.metrics import Metrics

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

DRAIN_LIMIT = 16 * 1_048_576
REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
LOGGED_FIELDS = ("principal", "role", "thread_id", "run_id", "interrupt_id", "rate_limited")
log = structlog.get_logger("holdpoint.http")


class RequestLogMiddleware:
    def __init__(self, app: ASGIApp, *, metrics: Metrics | None, max_body_bytes: int) -> None:
        self.app = app
        self.metrics = metrics
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = _wanted_headers(scope["headers"])
        given = headers.get("x-request-id", "")
        request_id = given if REQUEST_ID.fullmatch(given) else uuid.uuid4().hex
        state = scope.setdefault("state", {})
        state["request_id"] = request_id
        started = time.perf_counter()
        status = [500]

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
                message["headers"] = [
                    *message.get("headers", []),
                    (b"x-request-id", request_id.encode()),
                ]
            await send(message)

        with structlog.contextvars.bound_contextvars(request_id=request_id):
            try:
                too_big = self._too_big(headers)
                if too_big is not None:
                    if headers.get("expect", "").lower() != "100-continue":
                        await _drain(receive, DRAIN_LIMIT)
                    await _send_problem(scope, send_with_id, too_big)
                elif "content-length" not in headers and scope["method"] in (
                    "POST",
                    "PUT",
                    "PATCH",
                ):
                    body = await self._read_limited(receive)
                    if body is None:
                        await _send_problem(scope, send_with_id, self._problem())
                    else:
                        await self.app(scope, replay_body(body, receive), send_with_id)
                else:
                    await self.app(scope, receive, send_with_id)
            finally:
                self._finish(scope, state, status[0], time.perf_counter() - started)

    def _problem(self) -> Problem:
        msg = f"The request body is larger than {self.max_body_bytes} bytes, the server's limit"
        return Problem(413, msg, code="body-too-large")

    def _too_big(self, headers: dict[str, str]) -> Problem | None:
        length = headers.get("content-length")
        if length is None:
            return None
        if not length.isdigit():
            return Problem(400, f"Content-Length {length!r} is not a number", code="bad-request")
        return self._problem() if int(length) > self.max_body_bytes else None

    async def _read_limited(self, receive: Receive) -> bytes | None:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return b"".join(chunks)
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                if message.get("more_body"):
                    await _drain(receive, DRAIN_LIMIT)
                return None
            chunks.append(chunk)
            if not message.get("more_body"):
                return b"".join(chunks)

    def _finish(self, scope: Scope, state: dict[str, Any], status: int, seconds: float) -> None:
        route = getattr(scope.get("route"), "path", None) or "unmatched"
        method = scope["method"]
        fields = dict(state.get("log_fields") or {})
        params = scope.get("path_params") or {}
        for name in ("thread_id", "run_id", "interrupt_id"):
            if name in params:
                fields.setdefault(name, params[name])
        line = {name: fields[name] for name in LOGGED_FIELDS if fields.get(name) is not None}
        log.info(
            "request",
            method=method,
            route=route,
            path=scope.get("path"),
            status=status,
            duration_ms=round(seconds * 1000, 2),
            **line,
        )
        if self.metrics is not None:
            self.metrics.observe_request(route, method, status, seconds)


_WANTED = frozenset((b"x-request-id", b"content-length", b"expect"))


def _wanted_headers(raw: list[tuple[bytes, bytes]]) -> dict[str, str]:
    """The headers this middleware reads, without decoding the others (ASGI servers
    send header names lowercased: the ASGI specification requires it)."""
    return {name.decode(): value.decode("latin-1") for name, value in raw if name in _WANTED}


async def _drain(receive: Receive, limit: int) -> None:
    """Read and drop what is left of a request body, at most `limit` bytes."""
    dropped = 0
    while dropped <= limit:
        message = await receive()
        if message["type"] != "http.request" or not message.get("more_body"):
            return
        dropped += len(message.get("body", b""))


def replay_body(body: bytes, receive: Receive) -> Receive:
    """A `receive` that gives `body` (already read) first, then what `receive` gives."""
    sent = [False]

    async def replay() -> Message:
        if not sent[0]:
            sent[0] = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _send_problem(scope: Scope, send: Send, problem: Problem) -> None:
    body = json.dumps(problem.body(scope.get("path", ""))).encode()
    headers = [
        (b"content-type", MEDIA_TYPE.encode()),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": problem.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
