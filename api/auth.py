"""Who is calling, and may they: API keys, roles, and the refusals on record.

A key comes as `Authorization: Bearer <key>` or `x-api-key: <key>` (what the
LangGraph SDK sends). Each endpoint needs one permission; each permission is
held by some roles (`PERMISSIONS`). Every refusal (no key, an unknown or
revoked key, a role without the permission) is recorded with the keyring
before the 401 or 403 goes out, so auditors can read it; so is the first
429 of a key over its rate limit (`throttle`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from fastapi import Depends, Request, Security
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool

from api.problems import Problem
from api.services import Services
from domain.errors import AuthenticationError
from domain.identity import Principal


class Permission(StrEnum):
    READ = "read threads, runs and assistants"
    RUN = "start and run threads"
    DECIDE = "decide interrupts"
    CANCEL = "cancel threads"
    QUEUE = "read the approval queue"
    AUDIT = "read events, audit timelines, refusals, reports and metrics"


PERMISSIONS: dict[Permission, tuple[str, ...]] = {
    Permission.READ: ("agent", "reviewer", "auditor", "admin"),
    Permission.RUN: ("agent", "admin"),
    Permission.DECIDE: ("reviewer", "admin"),
    Permission.CANCEL: ("reviewer", "admin"),
    Permission.QUEUE: ("reviewer", "auditor", "admin"),
    Permission.AUDIT: ("auditor", "admin"),
}


# Declared for the OpenAPI document (the /docs "Authorize" button); read by api_key_of.
API_KEY_HEADER = APIKeyHeader(name="x-api-key", auto_error=False, description="An API key")
BEARER = HTTPBearer(auto_error=False, description="An API key, as a bearer token")
KeyHeader = Annotated[str | None, Security(API_KEY_HEADER)]
BearerHeader = Annotated[HTTPAuthorizationCredentials | None, Security(BEARER)]


def api_key_of(request: Request) -> str | None:
    """The key a request carries, from `Authorization: Bearer` or `x-api-key`."""
    authorization = request.headers.get("authorization")
    if authorization:
        scheme, _, credentials = authorization.partition(" ")
        if scheme.lower() == "bearer" and credentials.strip():
            return credentials.strip()
    return request.headers.get("x-api-key")


def action_of(request: Request) -> str:
    return f"{request.method} {request.url.path}"


def target_of(request: Request) -> str | None:
    params = request.path_params
    return params.get("interrupt_id") or params.get("thread_id")


def note(request: Request, **fields: Any) -> None:
    """Add fields to the request's log line (see api/request_log.py)."""
    request.state.log_fields = {**getattr(request.state, "log_fields", {}), **fields}


def refuse(
    services: Services,
    request: Request,
    principal: Principal | None,
    status: int,
    reason: str,
    message: str,
    **extensions: Any,
) -> Problem:
    """Record a refused attempt and return the problem to raise."""
    services.keyring.record_refusal(
        principal=principal,
        action=action_of(request),
        reason=reason,
        message=message,
        target=target_of(request),
    )
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    code = {401: "unauthenticated", 403: "forbidden"}.get(status, reason.replace("_", "-"))
    return Problem(status, message, code=code, headers=headers, reason=reason, **extensions)


def authenticate(request: Request, services: Services) -> Principal:
    try:
        principal = services.keyring.authenticate(api_key_of(request))
    except AuthenticationError as error:
        raise refuse(services, request, None, 401, error.reason, str(error)) from None
    note(request, principal=principal.id, role=principal.role)
    return principal


async def authenticate_async(request: Request, services: Services) -> Principal:
    """`authenticate` from the event loop: the key is checked on the loop itself where
    the store's reads never block (`services.key_checker`), else in a worker thread;
    a refusal is recorded in a worker thread."""
    checker = services.key_checker
    if checker is None:
        return await run_in_threadpool(authenticate, request, services)
    try:
        principal = checker.authenticate(api_key_of(request))
    except AuthenticationError as error:
        problem = await run_in_threadpool(
            refuse, services, request, None, 401, error.reason, str(error)
        )
        raise problem from None
    note(request, principal=principal.id, role=principal.role)
    return principal


def check(
    request: Request, services: Services, principal: Principal, permission: Permission
) -> None:
    """403, recorded, unless the principal's role holds the permission."""
    roles = PERMISSIONS[permission]
    if principal.role in roles:
        return
    message = (
        f"Principal {principal.id!r} has role {principal.role!r}, which may not "
        f"{permission.value}: that needs {' or '.join(roles)}"
    )
    raise refuse(services, request, principal, 403, "wrong_role", message)


def throttle(services: Services, request: Request, principal: Principal, kind: str) -> None:
    """429 when the principal's key is over its rate limit for `kind` (api/rate_limit.py).

    The first refusal of a run of them is recorded, in this thread: call it from a worker.
    """
    over = _over_limit(services, request, principal, kind)
    if over is None:
        return
    problem, record = over
    if record:
        _record(services, request, principal, problem)
    raise problem


async def throttle_async(
    services: Services, request: Request, principal: Principal, kind: str
) -> None:
    """`throttle` from the event loop: the bucket is read on the loop, a refusal recorded
    in a worker thread."""
    over = _over_limit(services, request, principal, kind)
    if over is None:
        return
    problem, record = over
    if record:
        await run_in_threadpool(_record, services, request, principal, problem)
    raise problem


def _over_limit(
    services: Services, request: Request, principal: Principal, kind: str
) -> tuple[Problem, bool] | None:
    verdict = services.rate_limiter.take(kind, principal.key_id)
    if verdict.allowed:
        return None
    limit = services.rate_limiter.limits[kind]
    message = (
        f"API key {principal.key_id} of {principal.id!r} is over its limit of {kind} "
        f"({limit.burst} at once, then {limit.rate:g} a second): retry after "
        f"{verdict.retry_after} s"
    )
    note(request, rate_limited=kind)
    headers = {"Retry-After": str(verdict.retry_after)}
    problem = Problem(
        429,
        message,
        code="rate-limited",
        headers=headers,
        reason="rate_limited",
        retry_after=verdict.retry_after,
    )
    return problem, verdict.first_refusal


def _record(services: Services, request: Request, principal: Principal, problem: Problem) -> None:
    services.keyring.record_refusal(
        principal=principal,
        action=action_of(request),
        reason="rate_limited",
        message=problem.detail,
        target=target_of(request),
    )


def requires(permission: Permission) -> Any:
    """A dependency: the authenticated principal, if it holds `permission`.

    Async, so that a request that passes costs no trip to a worker thread on an
    embedded store (see `authenticate_async`).
    """

    async def dependency(request: Request, _key: KeyHeader, _bearer: BearerHeader) -> Principal:
        services: Services = request.app.state.services  # as `get_services`, one step less
        principal = await authenticate_async(request, services)
        if principal.role not in PERMISSIONS[permission]:
            await run_in_threadpool(check, request, services, principal, permission)
        return principal

    dependency.permission = permission  # type: ignore[attr-defined]  # for tests and docs
    return Depends(dependency)


Reader = Annotated[Principal, requires(Permission.READ)]
Runner = Annotated[Principal, requires(Permission.RUN)]
Decider = Annotated[Principal, requires(Permission.DECIDE)]
Canceller = Annotated[Principal, requires(Permission.CANCEL)]
QueueReader = Annotated[Principal, requires(Permission.QUEUE)]
Auditor = Annotated[Principal, requires(Permission.AUDIT)]
