"""LangGraph-compatible runs: create, wait, stream (SSE), join, get, list.

Who may start a run is checked first: a role that may neither run nor decide
is refused before the body is validated, and the permission the body asks
for (to run, or to decide when it resumes) before any graph or thread is
looked up. A run begins in a worker thread (its input or answer checked and
committed; a bad one fails here, recording nothing) and goes on in the
background. `wait` and `join` answer with the run's output: the state values,
plus `__interrupt__` when the thread paused, or `__error__` when a node failed.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.concurrency import run_in_threadpool

from api.http.auth import (
    PERMISSIONS,
    Reader,
    RunnerOrDecider,
    check,
    note,
    throttle_async,
)
from api.http.decisions import ANSWER_ERRORS, answer_problem, record_refused_answer
from api.http.deps import ServicesDep
from api.http.positions import POSITION_HEADER
from api.http.problems import Problem, problem_responses
from api.http.routes.threads import thread_or_404
from api.http.run_requests import RUN_FIELDS, is_resume, prepare_run, run_permission
from api.http.schemas import RunCreate
from domain.access.identity import Principal
from service.rate_limit import RUNS
from service.run_record import DONE, RunRecord
from service.runs import RunRequest
from service.services import Services
from service.wire import output_json

router = APIRouter(tags=["runs (LangGraph)"])
KEEPALIVE_SECONDS = 15.0
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
    if principal.role not in PERMISSIONS[permission]:
        await run_in_threadpool(check, request, services, principal, permission)
    await throttle_async(services, request, principal, RUNS)

    def prepare() -> RunRequest:
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
    services.reservations.drop(record.origin_thread_id)
    note(request, run_id=record.run_id, thread_id=record.thread_id)
    return record


def run_headers(record: RunRecord, tail: str = "") -> dict[str, str]:
    path = f"/threads/{record.thread_id}/runs/{record.run_id}"
    headers = {"Content-Location": path}
    if tail:
        headers["Location"] = path + tail
    if record.position is not None:
        headers[POSITION_HEADER] = str(record.position)
    return headers


async def sse(record: RunRecord, modes: list[str]) -> AsyncIterator[bytes]:
    yield event("metadata", {"run_id": record.run_id, "attempt": 1})
    queue = record.subscribe()
    while True:
        try:
            chunk = await asyncio.wait_for(queue.get(), KEEPALIVE_SECONDS)
        except TimeoutError:
            yield b": keepalive\n\n"
            continue
        if chunk is DONE:
            break
        mode, data = chunk
        if mode in modes:
            yield event(mode, output_json(data))
    if record.output is not None and "__error__" in record.output:
        yield event("error", record.output["__error__"])


def event(name: str, data: Any) -> bytes:
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return f"event: {name}\ndata: {text}\n\n".encode()


def streaming(record: RunRecord) -> StreamingResponse:
    modes = list(record.kwargs.get("stream_mode") or ["values"])
    return StreamingResponse(
        sse(record, modes),
        media_type="text/event-stream",
        headers={**run_headers(record, "/stream"), "Cache-Control": "no-store"},
    )


async def finished(record: RunRecord) -> JSONResponse:
    await record.wait()
    return JSONResponse(record.output, headers=run_headers(record, "/join"))


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
    return await finished(record)


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
    return streaming(record)


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
    return await finished(record)


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
    return streaming(record)


# -- reading runs ---------------------------------------------------------


def run_or_404(services: Services, thread_id: str, run_id: str) -> RunRecord:
    record = services.runs.get(run_id)
    if record is None or not record.belongs_to(thread_id):
        msg = (
            f"Run {run_id} of thread {thread_id!r} is not known to this server process "
            "(run records are kept in memory; the thread's events are in the store)"
        )
        raise Problem(404, msg, code="run-not-found")
    return record


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
    records = [r for r in services.runs.of_thread(thread_id) if status in (None, r.status)]
    return [record.json() for record in records[offset : offset + limit]]


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
    return await finished(run_or_404(services, thread_id, run_id))


@router.get(
    "/threads/{thread_id}/runs/{run_id}/stream",
    summary="Stream a run's events (from its start)",
    responses=problem_responses(403, 404),
    response_class=StreamingResponse,
)
async def join_stream(
    thread_id: str, run_id: str, services: ServicesDep, _: Reader
) -> StreamingResponse:
    return streaming(run_or_404(services, thread_id, run_id))
