"""LangGraph-compatible threads: create, get, search, state, history."""

from __future__ import annotations

from typing import Annotated, Any
from uuid import uuid4

from fastapi import APIRouter, Header, Query, Request, Response
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from api.http.auth import (
    Permission,
    Reader,
    Runner,
    RunnerOrDecider,
    action_of,
    check,
    note,
)
from api.http.decisions import answer_problem
from api.http.deps import ServicesDep
from api.http.positions import set_position
from api.http.problems import Problem, problem_responses
from api.http.schemas import (
    HistoryQuery,
    StateAtCheckpoint,
    StateUpdate,
    ThreadCount,
    ThreadCreate,
    ThreadSearch,
    ThreadUpdate,
)
from api.http.thread_search import count_threads, search_threads
from api.http.thread_streams import resume_at, streaming_thread, thread_modes
from domain.access.identity import Principal
from domain.constants import END
from domain.engine.runtime import REQUEST_KEY
from domain.errors import ConcurrentUpdateError, OtherEngineError, ReasonRequiredError
from domain.history import state_snapshots as snapshots
from domain.history.forks import fork_at_version
from domain.oversight.suspensions import Suspensions
from domain.record.langgraph_record import LANGGRAPH
from domain.record.thread import WorkflowThread
from service import cancellation
from service.langgraph_app import LangGraphApp
from service.services import Services
from service.wire import reserved_thread_json, state_json, thread_json

router = APIRouter(tags=["threads (LangGraph)"])


def not_found(thread_id: str) -> Problem:
    return Problem(404, f"Thread with ID {thread_id} not found", code="thread-not-found")


def thread_or_404(services: Services, thread_id: str) -> WorkflowThread:
    thread = services.store.thread(thread_id)
    if thread is None:
        raise not_found(thread_id)
    return thread


def thread_view(services: Services, thread_id: str) -> dict[str, Any]:
    thread = services.store.thread(thread_id)
    if thread is not None:
        return thread_json(thread, busy=services.runs.store.holder(thread_id) is not None)
    reservation = services.reservations.get(thread_id)
    if reservation is None:
        raise not_found(thread_id)
    return reserved_thread_json(thread_id, reservation.created_at, reservation.metadata)


@router.post(
    "/threads",
    summary="Create a thread",
    responses=problem_responses(403, 409, 503),
)
async def create_thread(
    body: ThreadCreate,
    request: Request,
    response: Response,
    services: ServicesDep,
    principal: Runner,
) -> dict[str, Any]:
    """With `metadata.graph_id` the thread is recorded at once (ThreadStarted, started by
    the caller); without, its id is reserved until its first run records it."""
    thread_id = body.thread_id or str(uuid4())
    note(request, thread_id=thread_id)
    if body.supersteps:
        raise Problem(422, "Invalid body.supersteps: not supported; run the thread instead")
    metadata = dict(body.metadata or {})
    graph_id = metadata.pop("graph_id", None)
    metadata.pop("assistant_id", None)
    if body.thread_id is None and graph_id is None:
        # A new random id (uuid4): taken by no thread, so reserved without a look at the store.
        reservation = await run_in_threadpool(
            services.reservations.add, thread_id, metadata, principal.id
        )
        return reserved_thread_json(thread_id, reservation.created_at, reservation.metadata)
    return await run_in_threadpool(
        _create_thread, services, body, response, principal, thread_id, metadata, graph_id
    )


def _create_thread(
    services: Services,
    body: ThreadCreate,
    response: Response,
    principal: Principal,
    thread_id: str,
    metadata: dict[str, Any],
    graph_id: object,
) -> dict[str, Any]:
    # A new random id (uuid4) is taken by no thread and no reservation: no look at the store.
    exists = body.thread_id is not None and (
        services.store.thread(thread_id) is not None
        or services.reservations.get(thread_id) is not None
    )
    if exists:
        if body.if_exists == "do_nothing":
            return thread_view(services, thread_id)
        raise Problem(409, f"Thread {thread_id!r} already exists", code="thread-exists")
    if graph_id is None:
        reservation = services.reservations.add(thread_id, metadata, principal.id)
        return reserved_thread_json(thread_id, reservation.created_at, reservation.metadata)
    graph = services.graph(str(graph_id))
    thread = graph.start_thread(thread_id, {"metadata": metadata}, principal.as_actor())
    try:
        set_position(response, services.store.record(thread))
    except ConcurrentUpdateError:
        raise Problem(409, f"Thread {thread_id!r} already exists", code="thread-exists") from None
    return thread_json(thread)


@router.patch(
    "/threads/{thread_id}",
    summary="Update a thread's metadata (recorded: MetadataUpdated, with who)",
    responses=problem_responses(403, 404, 409),
)
def update_thread(
    thread_id: str,
    body: ThreadUpdate,
    request: Request,
    response: Response,
    services: ServicesDep,
    principal: Runner,
) -> dict[str, Any]:
    """The keys given are merged into the metadata; `graph_id` and `assistant_id` are the
    graph's (422). A key set to its value already records nothing."""
    note(request, thread_id=thread_id)
    if body.ttl is not None:
        msg = "Invalid body.ttl: a thread's retention is set by policy, not per thread"
        raise Problem(422, msg, code="invalid-request")
    if services.store.thread(thread_id) is None:
        if services.reservations.get(thread_id) is not None:
            msg = f"Thread {thread_id!r} has not run yet: its metadata is what it was created with"
            raise Problem(409, msg, code="thread-has-no-graph")
        raise not_found(thread_id)
    position = services.store.update_metadata(thread_id, body.metadata, principal.as_actor())
    if position is not None:
        set_position(response, position)
    return thread_view(services, thread_id)


@router.delete(
    "/threads/{thread_id}",
    summary="Delete a thread: refused, the record is append-only",
    responses=problem_responses(403, 405),
)
def delete_thread(thread_id: str, request: Request, _: Runner) -> None:
    """Refused: a thread's events are the record of who decided what. They leave it only
    by a retention policy, recorded; cancel a thread to stop it (POST .../cancel)."""
    note(request, thread_id=thread_id)
    msg = (
        f"Thread {thread_id!r} is not deleted: the record is append-only; a thread's events "
        "leave it only by a recorded retention policy. To stop it: POST "
        f"/threads/{thread_id}/cancel"
    )
    raise Problem(405, msg, code="append-only", headers={"Allow": "GET, PATCH"})


@router.get(
    "/threads/{thread_id}/stream",
    summary="Stream a thread: the events of its runs, from those queued or running on",
    responses=problem_responses(403, 404, 422),
    response_class=StreamingResponse,
)
async def join_thread_stream(
    thread_id: str,
    services: ServicesDep,
    _: Reader,
    last_event_id: Annotated[
        str | None,
        Header(description="The `id` of the last event received: resume after it"),
    ] = None,
    stream_modes: Annotated[
        list[str] | None,
        Query(description="run_modes (default) or lifecycle, as LangGraph's server reads it"),
    ] = None,
    stream_mode: Annotated[
        list[str] | None, Query(description="The same, as LangGraph's SDKs send it")
    ] = None,
) -> StreamingResponse:
    """Never ends of itself: it follows the runs to come until it is dropped
    (api/http/thread_streams.py)."""
    modes = thread_modes([*(stream_modes or ()), *(stream_mode or ())])
    resume = resume_at(last_event_id)
    if services.store.thread(thread_id) is None and services.reservations.get(thread_id) is None:
        raise not_found(thread_id)
    return streaming_thread(services, thread_id, modes, resume)


@router.post("/threads/count", summary="Count threads", responses=problem_responses(403, 503))
def count(body: ThreadCount, services: ServicesDep, _: Reader) -> int:
    return count_threads(services, body)


@router.post(
    "/threads/{thread_id}/copy",
    summary="Copy a thread: a fork at its head, whose first event names the source",
    responses=problem_responses(403, 404, 409),
)
def copy_thread(
    thread_id: str, request: Request, response: Response, services: ServicesDep, principal: Runner
) -> dict[str, Any]:
    """The copy is a new thread (a random id) that starts as the source stands; its
    `ThreadForked` event names the source, its version and hash (lineage). A copy of a
    paused thread asks its questions again; one inside a decision's run needs someone
    who may decide it (403, recorded). A real LangGraph graph's thread is copied with its
    checkpoints, only at rest (409 paused or running, nothing written: the copy's
    question would be the source's own, under LangGraph's id for it)."""
    note(request, thread_id=thread_id)
    thread = services.store.thread(thread_id)
    if thread is None and services.reservations.get(thread_id) is not None:
        msg = f"Thread {thread_id!r} has not run yet: there is nothing to copy"
        raise Problem(409, msg, code="thread-has-no-graph")
    if thread is None:
        raise not_found(thread_id)
    copied = fork_at_version(
        services.store, thread_id, thread.version, principal.as_actor(), str(uuid4())
    )
    set_position(response, copied.position)
    return thread_view(services, copied.thread_id)


@router.get("/threads/{thread_id}", summary="Get a thread", responses=problem_responses(403, 404))
def get_thread(thread_id: str, services: ServicesDep, _: Reader) -> dict[str, Any]:
    return thread_view(services, thread_id)


@router.post("/threads/search", summary="Search threads", responses=problem_responses(403, 503))
def search(body: ThreadSearch, services: ServicesDep, _: Reader) -> list[dict[str, Any]]:
    """Newest first, from the thread index (brought up to date first), filtered by
    `metadata` (with `graph_id`), `status`, `ids` and `values`."""
    return search_threads(services, body)


@router.get(
    "/threads/{thread_id}/state",
    summary="Get a thread's current state",
    responses=problem_responses(403, 404),
)
def get_state(
    thread_id: str, services: ServicesDep, _: Reader, subgraphs: bool = False
) -> dict[str, Any]:
    del subgraphs  # no subgraphs in Holdpoint
    return current_state(services, thread_id)


def current_state(services: Services, thread_id: str) -> dict[str, Any]:
    config = {"configurable": {"thread_id": thread_id}}
    thread = services.store.thread(thread_id)
    if thread is None and services.reservations.get(thread_id) is None:
        raise not_found(thread_id)
    if thread is not None and thread.engine == LANGGRAPH:
        return state_json(langgraph_app(services, thread).state(thread_id), thread)
    return state_json(snapshots.get_state(services.store, config), thread)


def state_at(services: Services, thread_id: str, checkpoint_id: str | None) -> dict[str, Any]:
    thread = thread_or_404(services, thread_id)
    if not checkpoint_id:
        return current_state(services, thread_id)
    if thread.engine == LANGGRAPH:
        snapshot = langgraph_app(services, thread).state(thread_id, checkpoint_id)
        if not snapshot.config:
            raise Problem(
                404,
                f"Checkpoint {checkpoint_id} not found in thread {thread_id!r}",
                code="checkpoint-not-found",
            )
        return state_json(snapshot, thread)
    config = {"configurable": {"thread_id": thread_id, "checkpoint_id": checkpoint_id}}
    return state_json(snapshots.get_state(services.store, config), thread)


def langgraph_app(services: Services, thread: WorkflowThread) -> LangGraphApp:
    """The served LangGraph graph of a real LangGraph graph's thread (its checkpoints are
    read through it: LangGraph needs the graph to show its state)."""
    graph = services.graph_of_thread(thread)
    if not isinstance(graph, LangGraphApp):  # its id now served by the native engine
        raise OtherEngineError(thread.thread_id, thread.engine)
    return graph


@router.get(
    "/threads/{thread_id}/state/{checkpoint_id}",
    summary="Get a thread's state at a checkpoint",
    responses=problem_responses(403, 404),
)
def get_state_at(
    thread_id: str, checkpoint_id: str, services: ServicesDep, _: Reader, subgraphs: bool = False
) -> dict[str, Any]:
    del subgraphs
    return state_at(services, thread_id, checkpoint_id)


@router.post(
    "/threads/{thread_id}/state/checkpoint",
    summary="Get a thread's state at a checkpoint (by body)",
    responses=problem_responses(403, 404),
)
def post_state_at(
    thread_id: str, body: StateAtCheckpoint, services: ServicesDep, _: Reader
) -> dict[str, Any]:
    return state_at(services, thread_id, body.checkpoint.checkpoint_id)


@router.post(
    "/threads/{thread_id}/state",
    summary="Update a thread's state (a human's edit, recorded as StateEdited)",
    responses=problem_responses(403, 404, 409, 503),
)
async def update_state(
    thread_id: str,
    body: StateUpdate,
    request: Request,
    response: Response,
    services: ServicesDep,
    principal: RunnerOrDecider,
) -> dict[str, Any]:
    """From a past `checkpoint_id`, the edit forks a new thread (its id is in the answer).

    The edit holds the thread as a run does: one that arrives while a run holds it waits
    for that run to end (up to the busy-wait timeout, then a 409 thread-busy, nothing
    recorded), so it lands between runs, never inside one.

    Where a hold point is at stake the edit obeys its rules (domain/oversight/hold_points.py): while
    an interrupt is pending (or an answer's run goes on) only who may decide it edits; an
    edit `as_node` decides the flow, so it needs a role that decides and a `reason`; a fork
    inside a decision's run needs who may decide it. A refusal is a 403, recorded.

    `values: null` `as_node: "__end__"` (Agent Inbox's "mark as resolved") ends the thread
    where it stands: a cancellation by who may cancel, recorded (`resolve`)."""
    if isinstance(body.values, list):
        raise Problem(422, "Invalid body.values: give a dict of state values")
    if body.as_node == END:
        return await resolve(thread_id, body, request, response, services, principal)
    thread = await run_in_threadpool(services.store.thread, thread_id)
    if thread is None and await run_in_threadpool(services.reservations.get, thread_id) is None:
        raise not_found(thread_id)
    if thread is None:
        msg = f"Thread {thread_id!r} has not run yet, so it has no graph: run it first"
        raise Problem(409, msg, code="thread-has-no-graph")
    graph = services.graph_of_thread(thread)
    # An edit moves a thread on (as_node: past a hold point) as a run would: not while its
    # graph is suspended. Mark as resolved above, a stop, still is.
    await run_in_threadpool(Suspensions(services.store).check, thread.graph_id)
    checkpoint_id = body.checkpoint_id or (
        body.checkpoint.checkpoint_id if body.checkpoint else None
    )
    configurable: dict[str, Any] = {
        "thread_id": thread_id,
        "actor": principal.as_actor(),
        "reason": body.reason,
        REQUEST_KEY: {"action": action_of(request), "target": thread_id},
    }
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id

    def edit() -> dict[str, Any]:
        with services.runs.holding(thread_id):
            return graph.update_state({"configurable": configurable}, body.values, body.as_node)

    try:
        config = await run_in_threadpool(edit)
    except ReasonRequiredError as error:
        raise answer_problem(error, {"reason": "body.reason"}) from None
    set_position(response, await run_in_threadpool(services.read_models.head))
    note(request, thread_id=thread_id)
    configurable_out = dict(config["configurable"])
    return {
        "checkpoint": configurable_out,
        "configurable": configurable_out,
        "checkpoint_id": configurable_out.get("checkpoint_id"),
    }


RESOLVED = "Marked as resolved (update_state as __end__)"


async def resolve(
    thread_id: str,
    body: StateUpdate,
    request: Request,
    response: Response,
    services: Services,
    principal: Principal,
) -> dict[str, Any]:
    """End the thread without running what is pending, as LangGraph's `update_state(None,
    as_node=END)` does: recorded as its cancellation (ThreadCancelled, with the actor and
    the reason), so it needs a role that may cancel, and it withdraws pending interrupts."""
    if body.values is not None:
        msg = (
            "Invalid body.values: as_node __end__ ends the thread where it stands (mark as "
            "resolved) and takes no values; send values null"
        )
        raise Problem(422, msg, code="invalid-request")
    await run_in_threadpool(check, request, services, principal, Permission.CANCEL)
    note(request, thread_id=thread_id)
    thread = await run_in_threadpool(services.store.thread, thread_id)
    if thread is None:
        raise not_found(thread_id)
    actor, reason = principal.as_actor(), body.reason or RESOLVED
    set_position(
        response,
        await run_in_threadpool(cancellation.cancel_thread, services, thread_id, actor, reason),
    )
    state = await run_in_threadpool(current_state, services, thread_id)
    checkpoint = dict(state["checkpoint"])
    return {
        "checkpoint": checkpoint,
        "configurable": checkpoint,
        "checkpoint_id": checkpoint.get("checkpoint_id"),
    }


def history(services: Services, thread_id: str, query: HistoryQuery) -> list[dict[str, Any]]:
    thread = thread_or_404(services, thread_id)
    before = _checkpoint_id_of(query.before)
    config = {"configurable": {"thread_id": thread_id}}
    at_or_before = query.checkpoint.checkpoint_id if query.checkpoint else None
    found = []
    passed = at_or_before is None
    listed = (
        langgraph_app(services, thread).history(thread_id, filter=query.metadata, before=before)
        if thread.engine == LANGGRAPH
        else snapshots.get_state_history(
            services.store,
            config,
            filter=query.metadata,
            before=None if before is None else {"configurable": {"checkpoint_id": before}},
        )
    )
    for snapshot in listed:
        state = state_json(snapshot, thread)
        passed = passed or state["checkpoint_id"] == at_or_before
        if passed:
            found.append(state)
        if len(found) >= query.limit:
            break
    return found


def _checkpoint_id_of(before: str | dict[str, Any] | None) -> str | None:
    """`before` as the SDK may send it: an id, `{checkpoint_id}` or `{configurable: {...}}`."""
    if before is None or isinstance(before, str):
        return before
    inner = before.get("configurable") or before
    value = inner.get("checkpoint_id") if isinstance(inner, dict) else None
    return None if value is None else str(value)


@router.post(
    "/threads/{thread_id}/history",
    summary="List a thread's checkpoints, newest first",
    responses=problem_responses(403, 404),
)
def post_history(
    thread_id: str, body: HistoryQuery, services: ServicesDep, _: Reader
) -> list[dict[str, Any]]:
    return history(services, thread_id, body)


@router.get(
    "/threads/{thread_id}/history",
    summary="List a thread's checkpoints, newest first",
    responses=problem_responses(403, 404),
)
def get_history(
    thread_id: str,
    services: ServicesDep,
    _: Reader,
    limit: int = Query(default=10, ge=1, le=1000),
    before: str | None = None,
) -> list[dict[str, Any]]:
    return history(services, thread_id, HistoryQuery(limit=limit, before=before))
