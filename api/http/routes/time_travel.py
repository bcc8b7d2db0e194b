"""Time travel over HTTP, read-only: a thread at a version or a moment, diffs, lineage.

The LangGraph-compatible reads (`GET /threads/{id}/state/{checkpoint_id}`,
`POST /threads/{id}/history`) are in `routes_threads`. These add what
LangGraph's server lacks. None of them runs a graph's code: a thread of a
graph this server does not serve reads the same. An event's `actor` is left
out here; auditors read it with `GET /threads/{id}/events`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query

from api.http.auth import Reader
from api.http.deps import ServicesDep
from api.http.problems import problem_responses
from api.presenters.time_travel import diff_json, state_json
from domain.history.time_travel import (
    diff_versions,
    head_version,
    state_at_time,
    state_at_version,
)
from service.lineage import lineage, lineage_json

router = APIRouter(tags=["threads (time travel)"])
REF = "a version number (1 is the first event) or a checkpoint id"


@router.get(
    "/threads/{thread_id}/versions/{version}",
    summary="A thread's state right after one version's event, and that event",
    responses=problem_responses(403, 404),
)
def get_version(thread_id: str, version: int, services: ServicesDep, _: Reader) -> dict[str, Any]:
    """Values, next nodes, status and pending interrupts as they stood at `version`,
    with the event recorded there and the latest checkpoint at or before it."""
    return state_json(state_at_version(services.store, thread_id, version), with_actor=False)


@router.get(
    "/threads/{thread_id}/as-of",
    summary="A thread's state at a past moment",
    responses=problem_responses(403, 404),
)
def get_as_of(
    thread_id: str,
    services: ServicesDep,
    _: Reader,
    at: Annotated[
        datetime,
        Query(description="ISO 8601 time (UTC when it has no offset); the last version by then"),
    ],
) -> dict[str, Any]:
    moment = at if at.tzinfo else at.replace(tzinfo=UTC)
    return state_json(state_at_time(services.store, thread_id, moment), with_actor=False)


@router.get(
    "/threads/{thread_id}/diff",
    summary="Which state keys changed between two versions, with old and new values",
    responses=problem_responses(403, 404),
)
def get_diff(
    thread_id: str,
    services: ServicesDep,
    _: Reader,
    from_ref: Annotated[str, Query(alias="from", min_length=1, max_length=64, description=REF)],
    to_ref: Annotated[str, Query(alias="to", min_length=1, max_length=64, description=REF)],
) -> dict[str, Any]:
    return diff_json(diff_versions(services.store, thread_id, from_ref, to_ref))


@router.get(
    "/threads/{thread_id}/lineage",
    summary="The thread a thread was forked from, and the threads forked from it",
    responses=problem_responses(403, 404, 503),
)
def get_lineage(thread_id: str, services: ServicesDep, _: Reader) -> dict[str, Any]:
    """Forks are found in the thread index, which is brought up to date first."""
    head_version(services.store, thread_id)  # 404 for an unknown thread
    services.read_models.catch_up_to_head()
    return lineage_json(lineage(services.store, services.read_models.db, thread_id))
