"""Who is calling, and may they: API keys, roles, and the refusals on record.

A key comes as `Authorization: Bearer <key>` or `x-api-key: <key>` (what the
LangGraph SDK sends). Each endpoint needs one permission (a run endpoint: to
run, or to decide when the run resumes); each permission is held by some roles:
the built-in ones (`PERMISSIONS`) and the custom ones the server is configured
with (`ServerSettings.roles`, domain/access/roles.py). Every refusal (no key, an
unknown or revoked key, a role without the permission) is recorded with the
keyring before the 401 or 403 goes out, so auditors can read it; so is the first
429 of a key over its rate limit (`throttle`), and the first 429 of a client
address that sent too many requests without a valid key (the 401s it would
otherwise get are then not recorded, so a flood cannot grow the store).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from fastapi import Depends, Request, Security
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool

from api.http.problems import Problem
from domain.access.identity import Principal
from domain.access.roles import BUILT_IN, Roles
from domain.errors import AuthenticationError
from service.rate_limit import AUTH_FAILURES
from service.services import Services


class Permission(StrEnum):
    READ = "read threads, runs and assistants"
    RUN = "start and run threads"
    DECIDE = "decide interrupts"
    CANCEL = "cancel threads"
    QUEUE = "read the approval queue"
    AUDIT = "read events, audit timelines, refusals, reports and metrics"
    LIFT = "lift a graph's suspension"

    @property
    def key(self) -> str:
        """Its name in a holdpoint.toml's `[roles]` table: "read", "decide", ..."""
        return self.name.lower()


# The built-in roles holding each permission.
PERMISSIONS: dict[Permission, tuple[str, ...]] = {p: BUILT_IN.holding(p.key) for p in Permission}


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
    """Add fields to the request's log line (see api/http/request_log.py)."""
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
    record_refusal(services, request, principal, reason, message)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    code = {401: "unauthenticated", 403: "forbidden"}.get(status, reason.replace("_", "-"))
    return Problem(status, message, code=code, headers=headers, reason=reason, **extensions)


def record_refusal(
    services: Services, request: Request, principal: Principal | None, reason: str, message: str
) -> None:
    services.keyring.record_refusal(
        principal=principal,
        action=action_of(request),
        reason=reason,
        message=message,
        target=target_of(request),
    )


def too_many_requests(message: str, retry_after: int) -> Problem:
    """429 problem+json with `Retry-After` (whole seconds)."""
    headers = {"Retry-After": str(retry_after)}
    return Problem(
        429,
        message,
        code="rate-limited",
        headers=headers,
        reason="rate_limited",
        retry_after=retry_after,
    )


def authenticate(request: Request, services: Services) -> Principal:
    try:
        principal = services.keyring.authenticate(api_key_of(request))
    except AuthenticationError as error:
        raise unauthenticated(services, request, error) from None
    note(request, principal=principal.id, role=principal.role)
    return principal


def unauthenticated(services: Services, request: Request, error: AuthenticationError) -> Problem:
    """401, recorded; or 429 when the client's address is over its limit of failures,
    recorded only when it is the first of a run of them."""
    address = request.client.host if request.client else "unknown"
    verdict = services.rate_limiter.take(AUTH_FAILURES, address)
    if verdict.allowed:
        return refuse(services, request, None, 401, error.reason, str(error))
    limit = services.rate_limiter.limits[AUTH_FAILURES]
    message = (
        f"{error} - and {address} sent more than {limit.burst} requests without a valid key "
        f"({limit.rate:g} a second after that): retry after {verdict.retry_after} s"
    )
    note(request, rate_limited=AUTH_FAILURES)
    if verdict.first_refusal:
        record_refusal(services, request, None, "rate_limited", message)
    return too_many_requests(message, verdict.retry_after)


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
        problem = await run_in_threadpool(unauthenticated, services, request, error)
        raise problem from None
    note(request, principal=principal.id, role=principal.role)
    return principal


def roles_holding(roles: Roles, *permissions: Permission) -> tuple[str, ...]:
    """The roles (of those in force, `roles`) that hold at least one of `permissions`."""
    return roles.holding(*(p.key for p in permissions))


def may(services: Services, principal: Principal, *permissions: Permission) -> bool:
    """Whether the principal's role, as the server is configured, holds one of them."""
    held = services.settings.roles.permissions(principal.role)
    return any(p.key in held for p in permissions)


def check(
    request: Request, services: Services, principal: Principal, *permissions: Permission
) -> None:
    """403, recorded, unless the principal's role holds one of the permissions."""
    if may(services, principal, *permissions):
        return
    roles = roles_holding(services.settings.roles, *permissions)
    unknown = principal.role not in services.settings.roles.names()
    configured = " (a role this server is not configured with)" if unknown else ""
    message = (
        f"Principal {principal.id!r} has role {principal.role!r}{configured}, which may not "
        f"{' or '.join(p.value for p in permissions)}: that needs {' or '.join(roles)}"
    )
    raise refuse(services, request, principal, 403, "wrong_role", message)


def throttle(services: Services, request: Request, principal: Principal, kind: str) -> None:
    """429 when the principal's key is over its rate limit for `kind` (service/rate_limit.py).

    The first refusal of a run of them is recorded, in this thread: call it from a worker.
    """
    over = _over_limit(services, request, principal, kind)
    if over is None:
        return
    problem, record = over
    if record:
        record_refusal(services, request, principal, "rate_limited", problem.detail)
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
        await run_in_threadpool(
            record_refusal, services, request, principal, "rate_limited", problem.detail
        )
    raise problem


def rate_key(principal: Principal) -> str:
    """Whose bucket a request takes from: its key's, or, signed in through a provider
    (no key), that principal's at that provider."""
    return principal.key_id or f"{principal.via}:{principal.issuer}:{principal.id}"


def _over_limit(
    services: Services, request: Request, principal: Principal, kind: str
) -> tuple[Problem, bool] | None:
    verdict = services.rate_limiter.take(kind, rate_key(principal))
    if verdict.allowed:
        return None
    limit = services.rate_limiter.limits[kind]
    who = f"API key {principal.key_id} of {principal.id!r}" if principal.key_id else principal.id
    message = (
        f"{who} is over its limit of {kind} "
        f"({limit.burst} at once, then {limit.rate:g} a second): retry after "
        f"{verdict.retry_after} s"
    )
    note(request, rate_limited=kind)
    return too_many_requests(message, verdict.retry_after), verdict.first_refusal


def requires(permission: Permission, *alternatives: Permission) -> Any:
    """A dependency: the authenticated principal, if it holds `permission` (or one of the
    `alternatives`: the endpoint then checks which one the request needs).

    Async, so that a request that passes costs no trip to a worker thread on an
    embedded store (see `authenticate_async`).
    """
    permissions = (permission, *alternatives)

    async def dependency(request: Request, _key: KeyHeader, _bearer: BearerHeader) -> Principal:
        services: Services = request.app.state.services  # as `get_services`, one step less
        principal = await authenticate_async(request, services)
        if not may(services, principal, *permissions):
            await run_in_threadpool(check, request, services, principal, *permissions)
        return principal

    dependency.permission = permission  # type: ignore[attr-defined]  # for tests and docs
    dependency.permissions = permissions  # type: ignore[attr-defined]
    return Depends(dependency)


Reader = Annotated[Principal, requires(Permission.READ)]
Runner = Annotated[Principal, requires(Permission.RUN)]
Decider = Annotated[Principal, requires(Permission.DECIDE)]
# The run endpoints: a run with input needs RUN, one that resumes needs DECIDE (the body says
# which: api/http/run_requests.py `run_permission`); a role with neither is refused at once.
RunnerOrDecider = Annotated[Principal, requires(Permission.RUN, Permission.DECIDE)]
RunnerOrCanceller = Annotated[Principal, requires(Permission.RUN, Permission.CANCEL)]
Canceller = Annotated[Principal, requires(Permission.CANCEL)]
QueueReader = Annotated[Principal, requires(Permission.QUEUE)]
Auditor = Annotated[Principal, requires(Permission.AUDIT)]
Lifter = Annotated[Principal, requires(Permission.LIFT)]
