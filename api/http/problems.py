"""Errors as RFC 9457 problem details (`application/problem+json`), in one place.

Every error response has `type`, `title`, `status`, `detail` (a precise
sentence: the LangGraph SDK shows it) and `instance` (the path); some add
members (`errors` for a 422, `decided_by` for a decision that came too late).
Domain and service errors are mapped to statuses here and nowhere else; no module
outside the HTTP entry points raises a Problem (tests/test_architecture.py).
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict
from starlette.exceptions import HTTPException as StarletteHTTPException

from domain import errors
from domain.history import forks, time_travel
from domain.record.store import StoreUnavailableError
from persistence.failures import STORE_UNAVAILABLE
from service import errors as service_errors

PROBLEM_TYPES = "https://holdpoint.dev/problems/"
MEDIA_TYPE = "application/problem+json"
log = structlog.get_logger()


class Problem(Exception):  # noqa: N818 - RFC 9457's name for the thing
    """An error to answer with: raise it anywhere in a request."""

    def __init__(
        self,
        status: int,
        detail: str,
        *,
        code: str | None = None,
        headers: dict[str, str] | None = None,
        **extensions: Any,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.code = code or HTTPStatus(status).phrase.lower().replace(" ", "-")
        self.headers = headers or {}
        self.extensions = extensions

    def body(self, instance: str) -> dict[str, Any]:
        return {
            "type": PROBLEM_TYPES + self.code,
            "title": HTTPStatus(self.status).phrase,
            "status": self.status,
            "detail": self.detail,
            "instance": instance,
            **self.extensions,
        }


class ProblemDetail(BaseModel):
    """RFC 9457 problem details, as every error is answered."""

    model_config = ConfigDict(extra="allow")

    type: str
    title: str
    status: int
    detail: str
    instance: str


_DESCRIPTIONS = {
    400: "The body is not valid JSON (or not UTF-8)",
    401: "No API key, or an unknown or revoked one",
    403: "The key's role may not do this (or separation of duties forbids it)",
    404: "No such thread, run, interrupt or graph",
    405: "Refused: the record is append-only (`detail` says what to do instead)",
    409: "Conflict with the thread's current state, or another decision came first",
    413: "The request body is larger than the server accepts",
    422: "The request is well-formed but invalid: `detail` names the field",
    429: (
        "The key is over its rate limit, or this address sent too many requests without "
        "a valid key: retry after `Retry-After` seconds; or, on `POST /threads`, the "
        "principal holds too many reserved threads that never ran"
    ),
    503: "The store or the read models are not available in time",
}


_PROBLEM_CONTENT = {MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/ProblemDetail"}}}
# What any request with a body may get, before a route sees it (api/http/request_log.py,
# api/http/input_limits.py): added to every operation with a request body.
BODY_STATUSES = (400, 413)


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` for the given error statuses (401, 422 and 429 always)."""
    wanted = sorted({401, 422, 429, *statuses})
    return {
        status: {
            "model": ProblemDetail,
            "description": _DESCRIPTIONS.get(status, HTTPStatus(status).phrase),
            "content": _PROBLEM_CONTENT,
        }
        for status in wanted
    }


def document_body_problems(app: FastAPI) -> None:
    """Make the OpenAPI document list 400 and 413 for every operation that takes a body."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        document = build()
        for path_item in document.get("paths", {}).values():
            for operation in path_item.values():
                if not isinstance(operation, dict) or "requestBody" not in operation:
                    continue
                responses = operation.setdefault("responses", {})
                for status in BODY_STATUSES:
                    responses.setdefault(
                        str(status),
                        {"description": _DESCRIPTIONS[status], "content": _PROBLEM_CONTENT},
                    )
        return document

    app.openapi = openapi  # type: ignore[method-assign]


# domain error -> (status, problem code); the first matching class wins
_DOMAIN_STATUSES: list[tuple[type[Exception], int, str]] = [
    (errors.AuthenticationError, 401, "unauthenticated"),
    (errors.QuestionChangedError, 409, "question-changed"),
    (errors.QuestionAskedAgainError, 409, "question-changed"),
    (errors.OversightError, 403, "forbidden"),
    (errors.ThreadNotFoundError, 404, "thread-not-found"),
    (errors.ThreadUnreadableError, 409, "thread-unreadable"),
    (errors.CheckpointNotFoundError, 404, "checkpoint-not-found"),
    (time_travel.VersionNotFoundError, 404, "version-not-found"),
    (time_travel.NotYetStartedError, 404, "version-not-found"),
    (errors.NotInterruptedError, 409, "not-interrupted"),
    (errors.UnknownInterruptError, 409, "interrupt-not-pending"),
    (errors.ThreadInterruptedError, 409, "thread-interrupted"),
    (errors.ThreadBusyError, 409, "thread-busy"),
    (errors.ThreadCancelledError, 409, "thread-cancelled"),
    (errors.ThreadExistsError, 409, "thread-exists"),
    (errors.OtherEngineError, 409, "other-engine"),
    (forks.LangGraphForkError, 409, "fork-not-supported"),
    (errors.ConcurrentUpdateError, 409, "concurrent-update"),
    (errors.KeyAlreadyRevokedError, 409, "key-already-revoked"),
    (errors.ReducerUnavailableError, 409, "graph-not-loaded"),
    (errors.AmbiguousResumeError, 422, "ambiguous-resume"),
    (errors.EmptyInputError, 422, "empty-input"),
    (errors.ReasonRequiredError, 422, "reason-required"),
    (errors.DecisionContradictionError, 422, "decision-contradicts-resume"),
    (errors.InvalidThreadIdError, 422, "invalid-request"),
    (errors.GraphSuspendedError, 409, "graph-suspended"),
    (errors.SuspensionStateError, 409, "suspension-state"),
    (errors.LegalHoldNotFoundError, 404, "legal-hold-not-found"),
    (errors.LegalHoldError, 422, "invalid-request"),
    (errors.InvalidAssistantError, 422, "invalid-request"),
    (errors.AssistantNotFoundError, 404, "assistant-not-found"),
    (errors.AssistantExistsError, 409, "assistant-exists"),
    (errors.AssistantVersionNotFoundError, 404, "version-not-found"),
    (errors.AssistantChangedError, 409, "assistant-changed"),
    (errors.InvalidMemoryItemError, 422, "invalid-request"),
    (errors.MemoryItemNotFoundError, 404, "item-not-found"),
    (errors.InvalidScheduleError, 422, "invalid-request"),
    (errors.CronNotFoundError, 404, "cron-not-found"),
    (errors.CronChangedError, 409, "cron-changed"),
    (errors.InvalidUpdateError, 422, "invalid-update"),
    (errors.InvalidRoleError, 422, "invalid-role"),
    (errors.InvalidPrincipalError, 422, "invalid-principal"),
    (errors.ReadNotRecordedError, 503, "read-not-recorded"),
    (StoreUnavailableError, 503, "store-unavailable"),
    (service_errors.InterruptNeverRaisedError, 404, "unknown-interrupt"),
    (service_errors.InterruptNotOpenError, 409, "interrupt-not-open"),
    (service_errors.RunInProgressError, 409, "thread-busy"),
    (service_errors.RunNotFoundError, 404, "run-not-found"),
    (service_errors.RunNotActiveError, 409, "run-not-active"),
    (service_errors.GraphNotServedError, 409, "graph-not-served"),
    (service_errors.UnknownGraphError, 422, "unknown-assistant"),
    (service_errors.IdempotencyKeyReusedError, 422, "idempotency-key-reused"),
    (service_errors.PositionBeyondLogError, 422, "invalid-request"),
    (service_errors.EngineConfigError, 422, "invalid-request"),
    (service_errors.ReadModelBehindError, 503, "read-model-behind"),
    (service_errors.TooManyReservationsError, 429, "too-many-reservations"),
    (service_errors.ServerStoppingError, 503, "stopping"),
]
# The detail of an error that names no request field itself: the field it came from.
_FIELDS: dict[type[Exception], str] = {service_errors.PositionBeyondLogError: "query.wait_for"}
_HEADERS: dict[type[Exception], dict[str, str]] = {
    errors.AuthenticationError: {"WWW-Authenticate": "Bearer"},
    service_errors.ReadModelBehindError: {"Retry-After": "1"},
}


RETRY_AFTER_SECONDS = 2


def from_store_failure(error: Exception) -> Problem:
    """503 with Retry-After: the request may be sent again.

    A lock, a full disk or a refused connection writes nothing; a connection
    lost while committing may have written the request whole (never part of
    it), which is why a decision sent again with its Idempotency-Key is
    answered from the recorded event rather than recorded twice.

    The cause is named by its kind only: a driver's message can carry host
    names and paths that are none of the client's business (it is logged).
    """
    text = str(error).lower()
    if "locked" in text or "busy" in text:
        cause = "the store is locked by another writer"
    elif "full" in text or "no space" in text:
        cause = "the store's disk is full"
    elif "readonly" in text or "read-only" in text:
        cause = "the store is read-only"
    else:
        cause = "the store does not answer"
    detail = (
        f"The store could not complete the request: {cause}. Send it again in "
        f"{RETRY_AFTER_SECONDS} s; with the same Idempotency-Key a decision is recorded once"
    )
    return Problem(
        503,
        detail,
        code="store-unavailable",
        headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
    )


def from_domain_error(error: errors.HoldpointError) -> Problem:
    """The problem for a domain or service error; a refusal (on record: a hold point's
    by the domain, the others by the edge) carries its `reason` and what it says more."""
    for cls, status, code in _DOMAIN_STATUSES:
        if isinstance(error, cls):
            field = next((f for c, f in _FIELDS.items() if isinstance(error, c)), None)
            detail = f"Invalid {field}: {error}" if field else str(error)
            headers = next((h for c, h in _HEADERS.items() if isinstance(error, c)), None)
            extensions: dict[str, Any] = {}
            if isinstance(error, errors.OversightError | service_errors.RefusalError):
                extensions["reason"] = error.reason
            if isinstance(error, service_errors.RefusalError):
                extensions.update(error.members)
            if isinstance(error, errors.ThreadUnreadableError):  # which event: see verify
                extensions.update(thread_id=error.thread_id, version=error.version)
            return Problem(status, detail, code=code, headers=headers, **extensions)
    return Problem(400, str(error), code="bad-request")


def field_name(location: tuple[Any, ...] | list[Any]) -> str:
    """`("body", "command", "resume")` as `body.command.resume`."""
    return ".".join(str(part) for part in location) or "body"


def from_validation_error(error: RequestValidationError) -> Problem:
    details = list(error.errors())
    for item in details:
        if item.get("type") == "json_invalid":
            reason = (item.get("ctx") or {}).get("error") or item.get("msg")
            return Problem(400, f"The request body is not valid JSON: {reason}", code="bad-json")
    fields = [
        {
            "field": field_name(item.get("loc", ())),
            "message": item.get("msg", ""),
            "type": item.get("type"),
        }
        for item in details
    ]
    first = fields[0] if fields else {"field": "body", "message": "invalid"}
    more = f" (and {len(fields) - 1} more)" if len(fields) > 1 else ""
    detail = f"Invalid {first['field']}: {first['message']}{more}"
    return Problem(422, detail, code="invalid-request", errors=fields)


def respond(problem: Problem, request: Request) -> JSONResponse:
    return JSONResponse(
        problem.body(request.url.path),
        status_code=problem.status,
        headers=problem.headers,
        media_type=MEDIA_TYPE,
    )


def install_problem_handlers(app: FastAPI) -> None:
    """Answer every error as problem+json (and document the ones any body may get)."""
    document_body_problems(app)

    async def on_problem(request: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, Problem)
        return respond(error, request)

    async def on_domain_error(request: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, errors.HoldpointError)
        return respond(from_domain_error(error), request)

    async def on_validation_error(request: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, RequestValidationError)
        return respond(from_validation_error(error), request)

    async def on_http_error(request: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, StarletteHTTPException)
        detail = (
            error.detail if isinstance(error.detail, str) else HTTPStatus(error.status_code).phrase
        )
        if error.status_code == 404 and detail == "Not Found":
            detail = f"No endpoint {request.method} {request.url.path}; see /docs"
        problem = Problem(error.status_code, detail, headers=dict(error.headers or {}))
        return respond(problem, request)

    async def on_store_failure(request: Request, error: Exception) -> JSONResponse:
        log.warning("store unavailable", error_type=type(error).__name__, error=str(error))
        return respond(from_store_failure(error), request)

    async def on_unexpected(request: Request, error: Exception) -> JSONResponse:
        log.exception("unexpected error", error_type=type(error).__name__)
        detail = (
            f"An unexpected {type(error).__name__} occurred; it is logged with request id "
            f"{request.headers.get('x-request-id') or getattr(request.state, 'request_id', '?')}"
        )
        return respond(Problem(500, detail, code="internal-error"), request)

    app.add_exception_handler(Problem, on_problem)
    app.add_exception_handler(errors.HoldpointError, on_domain_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(StarletteHTTPException, on_http_error)
    for failure in STORE_UNAVAILABLE:
        app.add_exception_handler(failure, on_store_failure)
    app.add_exception_handler(Exception, on_unexpected)
