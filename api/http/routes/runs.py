"""LangGraph-compatible runs: create, wait, stream (SSE), join, get, list, cancel, delete.

Who may start a run is checked first: a role that may neither run nor decide
is refused before the body is validated, and the permission the body asks
for (to run, or to decide when it resumes) before any graph or thread is
looked up. A run begins in a worker thread (its input or answer checked and
committed; a bad one fails here, recording nothing) and goes on in the
background. `wait` and `join` answer with the run's output: the state values,
plus `__interrupt__` when the thread paused, or `__error__` when a node failed.
"""

from __future__ import annotations

import contextlib
from typing import Annotated, Any

from fastapi import APIRouter, Body, Header, Query, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.concurrency import run_in_threadpool

from api.http.auth import (
    Permission,
    Reader,
    RunnerOrCanceller,
    RunnerOrDecider,
    check,
    may,
    note,
    throttle_async,
)
from api.http.decisions import ANSWER_ERRORS, answer_problem, record_refused_answer
from api.http.deps import ServicesDep
from api.http.problems import Problem, from_domain_error, problem_responses
from api.http.routes.threads import thread_or_404
from api.http.run_requests import (
    RUN_FIELDS,
    check_webhook,
    is_resume,
    prepare_run,
    run_permission,
    webhook_of,
)
from api.http.run_streams import run_headers, run_modes, streaming
from api.http.schemas import BatchRun, RunCreate, RunsCancel
from domain.access.identity import Principal
from domain.errors import HoldpointError
from service import run_follow
from service.errors import RunNotActiveError
from service.rate_limit import RUNS
from service.run_record import PENDING, RunRecord
from service.run_store import StoredRun
from service.runs import RunRequest
from service.services import Services

router = APIRouter(tags=["runs (LangGraph)"])
RUN_ERRORS = problem_responses(400, 403, 404, 409, 413, 503)


async def begin(
    services: Services,
    request: Request,
    principal: Principal,
    thread_id: str | None,
    body: RunCreate,
    *,
    streamed: bool = False,
    until_done: bool = False,
) -> RunRecord:
    """Check the request and begin the run, in one run worker that then runs it to its end;
    return once it has begun, or with `until_done` once it has ended.

    The role first (403, recorded), then the rate limit, then the graph and the thread.
    A refused answer (a resume) is recorded as a refused decision is."""
    permission = run_permission(body)
    if not may(services, principal, permission):
        await run_in_threadpool(check, request, services, principal, permission)
    await throttle_async(services, request, principal, RUNS)

    def prepare() -> RunRequest:
        check_webhook(services, webhook_of(body))
        run_request = prepare_run(services, request, principal, thread_id, body, streamed=streamed)
        note(request, thread_id=run_request.thread_id)
        return run_request

    try:
        record = await services.runs.launch(prepare, until_done=until_done)
    except ANSWER_ERRORS as error:
        raise answer_problem(error, RUN_FIELDS) from None
    except Exception as error:
        if is_resume(body):
            await run_in_threadpool(record_refused_answer, services, request, principal, error)
        raise
    if record.status != PENDING:  # begun: the thread is on record (queued: not yet)
        services.reservations.drop(record.origin_thread_id)
    note(request, run_id=record.run_id, thread_id=record.thread_id)
    webhook = webhook_of(body)
    if webhook is not None:  # sent once the run has ended (service/notifications)
        await run_in_threadpool(services.watch_run, record.run_id, webhook)
    return record


async def finished(services: Services, run_id: str, record: RunRecord | None) -> JSONResponse:
    """The run's output once it has ended: from its record here, or from the store once it
    runs elsewhere (queued, taken over, or another process's)."""
    if record is not None:
        await record.wait()
        if not record.handed_over:
            return JSONResponse(record.output, headers=run_headers(record, "/join"))
        if record.failure is not None:  # the store stopped answering: 503, join it later
            raise record.failure
    stored = await run_follow.until_done(services.runs.store, run_id)
    return JSONResponse(stored.output, headers=run_headers(stored, "/join"))


# -- on a thread --------------------------------------------------------


@router.post(
    "/threads/{thread_id}/runs",
    summary="Start a run in the background",
    responses=RUN_ERRORS,
)
async def create_run(
    thread_id: str,
    body: RunCreate,
    request: Request,
    response: Response,
    services: ServicesDep,
    principal: RunnerOrDecider,
) -> dict[str, Any]:
    """Answers at once, with the run (`status: pending`); join it for its output."""
    record = await begin(services, request, principal, thread_id, body)
    response.headers.update(run_headers(record))
    return record.json()


@router.post(
    "/threads/{thread_id}/runs/wait",
    summary="Run until the graph ends or pauses, and answer with its output",
    responses=RUN_ERRORS,
)
async def wait_run(
    thread_id: str,
    body: RunCreate,
    request: Request,
    services: ServicesDep,
    principal: RunnerOrDecider,
) -> JSONResponse:
    record = await begin(services, request, principal, thread_id, body, until_done=True)
    return await finished(services, record.run_id, record)


@router.post(
    "/threads/{thread_id}/runs/stream",
    summary="Run, streaming `values` and `updates` as server-sent events",
    responses=RUN_ERRORS,
    response_class=StreamingResponse,
)
async def stream_run(
    thread_id: str,
    body: RunCreate,
    request: Request,
    services: ServicesDep,
    principal: RunnerOrDecider,
) -> StreamingResponse:
    record = await begin(services, request, principal, thread_id, body, streamed=True)
    return streaming(services, record, record, cancel_by=dropped_cancels(body, principal))


def dropped_cancels(body: RunCreate, principal: Principal) -> Principal | None:
    """Who cancels a streamed run if its stream is dropped: its starter, when asked."""
    return principal if body.on_disconnect == "cancel" else None


# -- stateless: on a new thread -------------------------------------------


@router.post("/runs", summary="Start a run on a new thread", responses=RUN_ERRORS)
async def create_stateless_run(
    body: RunCreate,
    request: Request,
    response: Response,
    services: ServicesDep,
    principal: RunnerOrDecider,
) -> dict[str, Any]:
    record = await begin(services, request, principal, None, body)
    response.headers.update(run_headers(record))
    return record.json()


@router.post("/runs/wait", summary="Run on a new thread and wait", responses=RUN_ERRORS)
async def wait_stateless_run(
    body: RunCreate, request: Request, services: ServicesDep, principal: RunnerOrDecider
) -> JSONResponse:
    record = await begin(services, request, principal, None, body, until_done=True)
    return await finished(services, record.run_id, record)


@router.post(
    "/runs/stream",
    summary="Run on a new thread, streaming",
    responses=RUN_ERRORS,
    response_class=StreamingResponse,
)
async def stream_stateless_run(
    body: RunCreate, request: Request, services: ServicesDep, principal: RunnerOrDecider
) -> StreamingResponse:
    record = await begin(services, request, principal, None, body, streamed=True)
    return streaming(services, record, record, cancel_by=dropped_cancels(body, principal))


BATCH_MAX = 100


@router.post(
    "/runs/batch",
    summary="Start a batch of runs in the background, each on its thread or a new one",
    responses=RUN_ERRORS,
)
async def create_batch(
    body: Annotated[list[BatchRun], Body(max_length=BATCH_MAX)],
    request: Request,
    services: ServicesDep,
    principal: RunnerOrDecider,
) -> list[dict[str, Any]]:
    """The runs begin in order, each as `POST /threads/{thread_id}/runs` (or `POST /runs`
    without a thread) begins it; the first refused ends the batch with its problem, whose
    detail names it and the runs begun before it (they go on)."""
    begun: list[dict[str, Any]] = []
    for index, item in enumerate(body):
        try:
            record = await begin(services, request, principal, item.thread_id, item)
        except (Problem, HoldpointError) as error:
            problem = error if isinstance(error, Problem) else from_domain_error(error)
            started = ", ".join(run["run_id"] for run in begun) or "none"
            problem.detail = f"Run {index} of the batch: {problem.detail} (begun: {started})"
            raise problem from None
        begun.append(record.json())
    return begun


# -- reading runs ---------------------------------------------------------


def run_or_404(services: Services, thread_id: str, run_id: str) -> StoredRun:
    stored = services.runs.store.get(run_id)
    if stored is None or not stored.belongs_to(thread_id):
        msg = f"Run {run_id} of thread {thread_id!r} not found"
        raise Problem(404, msg, code="run-not-found")
    return stored


@router.get(
    "/threads/{thread_id}/runs",
    summary="List a thread's runs, newest first",
    responses=problem_responses(403, 404),
)
def list_runs(
    thread_id: str,
    services: ServicesDep,
    _: Reader,
    limit: Annotated[int, Query(ge=1, le=1000)] = 10,
    offset: Annotated[int, Query(ge=0)] = 0,
    status: str | None = None,
) -> list[dict[str, Any]]:
    if services.reservations.get(thread_id) is None:
        thread_or_404(services, thread_id)
    runs = services.runs.store.of_thread(thread_id, limit=limit, offset=offset, status=status)
    return [run.json() for run in runs]


@router.get(
    "/threads/{thread_id}/runs/{run_id}",
    summary="Get a run",
    responses=problem_responses(403, 404),
)
def get_run(thread_id: str, run_id: str, services: ServicesDep, _: Reader) -> dict[str, Any]:
    return run_or_404(services, thread_id, run_id).json()


@router.get(
    "/threads/{thread_id}/runs/{run_id}/join",
    summary="Wait for a run to finish, and answer with its output",
    responses=problem_responses(403, 404),
)
async def join_run(thread_id: str, run_id: str, services: ServicesDep, _: Reader) -> JSONResponse:
    await run_in_threadpool(run_or_404, services, thread_id, run_id)
    return await finished(services, run_id, services.runs.local(run_id))


@router.get(
    "/threads/{thread_id}/runs/{run_id}/stream",
    summary="Stream a run's events: from its start, or after `Last-Event-ID`",
    responses=problem_responses(403, 404, 422),
    response_class=StreamingResponse,
)
async def join_stream(
    thread_id: str,
    run_id: str,
    request: Request,
    services: ServicesDep,
    principal: Reader,
    last_event_id: Annotated[
        str | None,
        Header(description="The `id` of the last event received: resume after it"),
    ] = None,
    stream_mode: Annotated[
        list[str] | None,
        Query(description="Some of the modes the run streams (default: all of them)"),
    ] = None,
    cancel_on_disconnect: Annotated[
        bool,
        Query(description="Cancel the run if this stream is dropped before it ends"),
    ] = False,
) -> StreamingResponse:
    if cancel_on_disconnect and not may(services, principal, Permission.RUN, Permission.CANCEL):
        await run_in_threadpool(
            check, request, services, principal, Permission.RUN, Permission.CANCEL
        )
    after = 0
    if last_event_id is not None and last_event_id.strip():
        if not last_event_id.strip().isascii() or not last_event_id.strip().isdigit():
            msg = (
                f"Invalid Last-Event-ID {last_event_id[:40]!r}: it is the id of an event of "
                "this run's stream, a number"
            )
            raise Problem(422, msg, code="invalid-request")
        after = int(last_event_id)
    stored = await run_in_threadpool(run_or_404, services, thread_id, run_id)
    streamed = run_modes(stored)
    asked = [mode for mode in stream_mode or () if mode]  # the SDK sends `stream_mode=`
    unknown = [mode for mode in asked if mode not in streamed]
    if unknown:
        msg = (
            f"Invalid stream_mode {unknown[0]!r}: the run streams {', '.join(streamed)}; "
            "a join streams some of those"
        )
        raise Problem(422, msg, code="invalid-request")
    local = services.runs.local(run_id)
    cancel_by = principal if cancel_on_disconnect else None
    return streaming(services, stored, local, modes=asked, after=after, cancel_by=cancel_by)


# -- cancelling and deleting runs -------------------------------------------


Action = Annotated[
    str,
    Query(
        pattern="^(interrupt|rollback)$",
        description="interrupt: stop at the step's end, keeping what it did; rollback is "
        "refused (it would delete the run's events)",
    ),
]


def cancel_action(action: str) -> None:
    if action == "rollback":
        msg = (
            "Invalid action 'rollback': it would delete the run's events, and the record is "
            "append-only; use action=interrupt (the run stops, and what it did stays)"
        )
        raise Problem(422, msg, code="invalid-request")


async def cancel_one(
    services: Services, run_id: str, principal: Principal, reason: str | None
) -> StoredRun:
    return await run_in_threadpool(services.runs.cancel, run_id, principal.as_actor(), reason)


@router.post(
    "/threads/{thread_id}/runs/{run_id}/cancel",
    summary="Cancel a run: it stops at its step's end, recorded (RunCancelled) with who asked",
    status_code=202,
    responses={**problem_responses(403, 404, 409, 422), 204: {"description": "Stopped"}},
    response_class=Response,
)
async def cancel_run(
    thread_id: str,
    run_id: str,
    request: Request,
    services: ServicesDep,
    principal: RunnerOrCanceller,
    wait: bool = False,
    action: Action = "interrupt",
    reason: Annotated[str | None, Query(max_length=4000)] = None,
) -> Response:
    """A queued run ends at once; a running one stops once its current step has ended (a
    run of another process, once its runner next renews its lease: a third of
    `run_lease_seconds` at most). With `wait`, answers 204 once it has stopped."""
    cancel_action(action)
    note(request, thread_id=thread_id, run_id=run_id)
    await run_in_threadpool(run_or_404, services, thread_id, run_id)
    await cancel_one(services, run_id, principal, reason)
    if not wait:
        return Response(status_code=202)
    await run_follow.until_done(services.runs.store, run_id)
    return Response(status_code=204)


@router.post(
    "/runs/cancel",
    summary="Cancel runs: of a thread, or by id, pending or running",
    status_code=204,
    responses=problem_responses(403, 404, 422),
    response_class=Response,
)
async def cancel_runs(
    body: RunsCancel,
    request: Request,
    services: ServicesDep,
    principal: RunnerOrCanceller,
    action: Action = "interrupt",
) -> Response:
    """The runs named by `run_ids`, or those of `thread_id`, that are `status` (pending,
    running, or all: the default); runs that have ended are passed by."""
    cancel_action(action)
    if body.thread_id is None and not body.run_ids:
        msg = "Invalid body: name the runs to cancel, by thread_id or run_ids"
        raise Problem(422, msg, code="invalid-request")
    wanted = ("pending", "running") if body.status in (None, "all") else (body.status,)

    def active() -> list[StoredRun]:
        if body.run_ids:
            runs = [services.runs.store.get(run_id) for run_id in body.run_ids]
            found = [run for run in runs if run is not None]
            if body.thread_id is not None:
                found = [run for run in found if run.belongs_to(body.thread_id)]
        else:
            assert body.thread_id is not None
            found = services.runs.store.of_thread(body.thread_id, limit=1000)
        return [run for run in found if run.status in wanted]

    for run in await run_in_threadpool(active):
        note(request, thread_id=run.thread_id)
        with contextlib.suppress(RunNotActiveError):  # it ended meanwhile
            await cancel_one(services, run.run_id, principal, None)
    return Response(status_code=204)


@router.delete(
    "/threads/{thread_id}/runs/{run_id}",
    summary="Delete a run that has ended: its row, never its events",
    status_code=204,
    responses=problem_responses(403, 404, 409),
    response_class=Response,
)
async def delete_run(
    thread_id: str, run_id: str, request: Request, services: ServicesDep, _: RunnerOrCanceller
) -> Response:
    """The run's row (its status, output and request) is deleted; what it did stays in
    the thread's events. A run that has not ended is a 409: cancel it first."""
    note(request, thread_id=thread_id, run_id=run_id)
    stored = await run_in_threadpool(run_or_404, services, thread_id, run_id)
    if not stored.done:
        raise RunNotActiveError(run_id, stored.status) from None
    await run_in_threadpool(services.runs.store.delete, run_id)
    return Response(status_code=204)
