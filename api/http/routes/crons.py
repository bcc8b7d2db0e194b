"""LangGraph's crons (`client.crons`): runs on a schedule, as recorded facts.

A cron is made, changed and deleted by a key that may run (its events name who), and
each firing is recorded on it (`CronFired`) before its run starts, as the cron's maker
(`domain/schedule`, `service/cron_scheduler.py`). A cron on a thread runs there; one
without a thread runs each time on a new thread. Run options a cron's run does not take
are refused by name.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from starlette.concurrency import run_in_threadpool

from api.http.auth import Reader, Runner, note
from api.http.deps import ServicesDep
from api.http.problems import Problem, problem_responses
from api.http.routes.threads import not_found
from api.http.run_requests import check_webhook
from api.http.schemas import CronCount, CronCreate, CronSearch, CronUpdate
from domain.access.identity import Principal
from domain.schedule.cron import Cron
from domain.schedule.crons import Crons
from projections.cron_index import CronIndex, CronRow
from projections.timestamps import utc_text
from service.assistant_ids import assistant_id
from service.cron_scheduler import RUN_FIELDS
from service.langgraph_app import check_engine_keys
from service.services import Services

router = APIRouter(tags=["crons (LangGraph)"])
CHANGED_RUN_FIELDS = ("input", "config", "context", "webhook")


@router.post(
    "/runs/crons",
    summary="Schedule runs, each on a new thread",
    responses=problem_responses(403, 404),
)
def create_cron(
    body: CronCreate, request: Request, services: ServicesDep, principal: Runner
) -> dict[str, Any]:
    return cron_json(schedule(services, request, principal, None, body))


@router.post(
    "/threads/{thread_id}/runs/crons",
    summary="Schedule runs on a thread",
    responses=problem_responses(403, 404),
)
def create_thread_cron(
    thread_id: str, body: CronCreate, request: Request, services: ServicesDep, principal: Runner
) -> dict[str, Any]:
    thread = services.store.thread(thread_id)
    if thread is None and services.reservations.get(thread_id) is None:
        raise not_found(thread_id)
    if thread is not None and services.graph(body.assistant_id).graph_id != thread.graph_id:
        msg = f"Invalid body.assistant_id: thread {thread_id!r} runs graph {thread.graph_id!r}"
        raise Problem(422, msg, code="invalid-request")
    return cron_json(schedule(services, request, principal, thread_id, body))


@router.patch(
    "/runs/crons/{cron_id}",
    summary="Change a cron (recorded: CronUpdated, with who)",
    responses=problem_responses(403, 404, 409),
)
def update_cron(
    cron_id: str, body: CronUpdate, request: Request, services: ServicesDep, principal: Runner
) -> dict[str, Any]:
    refuse_extra(body.model_extra)
    note(request, cron_id=cron_id)
    crons = Crons(services.store)
    cron = crons.get(cron_id)
    given = body.model_dump(exclude_unset=True)
    check_webhook(services, given.get("webhook"))
    check_engine_keys((given.get("config") or {}).get("configurable") or {})
    changes: dict[str, Any] = {
        k: given[k] for k in ("schedule", "end_time", "enabled", "timezone") if k in given
    }
    if "metadata" in given:
        changes["metadata"] = given["metadata"] or {}
    run_changes = {k: given[k] for k in CHANGED_RUN_FIELDS if k in given}
    if run_changes:
        changes["payload"] = {**cron.payload, **run_changes}
    return cron_json(crons.update(cron_id, changes, principal.as_actor()))


@router.delete(
    "/runs/crons/{cron_id}",
    summary="Delete a cron (recorded: CronDeleted, with who); its runs stay",
    status_code=204,
    responses=problem_responses(403, 404, 409),
    response_class=Response,
)
def delete_cron(
    cron_id: str, request: Request, services: ServicesDep, principal: Runner
) -> Response:
    note(request, cron_id=cron_id)
    Crons(services.store).delete(cron_id, principal.as_actor())
    return Response(status_code=204)


@router.post("/runs/crons/search", summary="Search crons", responses=problem_responses(403, 503))
async def search_crons(body: CronSearch, services: ServicesDep, _: Reader) -> list[dict[str, Any]]:
    graph_id = None if body.assistant_id is None else services.graph(body.assistant_id).graph_id

    def search() -> list[CronRow]:
        services.read_models.catch_up_to_head()
        return CronIndex(services.read_models.db).search(
            graph_id=graph_id,
            thread_id=body.thread_id,
            enabled=body.enabled,
            sort_by=body.sort_by,
            descending=body.sort_order == "desc",
            limit=body.limit,
            offset=body.offset,
        )

    found = [row_json(row) for row in await run_in_threadpool(search)]
    if body.select:
        return [{k: v for k, v in item.items() if k in body.select} for item in found]
    return found


@router.post("/runs/crons/count", summary="Count crons", responses=problem_responses(403, 503))
async def count_crons(body: CronCount, services: ServicesDep, _: Reader) -> int:
    graph_id = None if body.assistant_id is None else services.graph(body.assistant_id).graph_id

    def count() -> int:
        services.read_models.catch_up_to_head()
        return CronIndex(services.read_models.db).count(graph_id=graph_id, thread_id=body.thread_id)

    return await run_in_threadpool(count)


def schedule(
    services: Services,
    request: Request,
    principal: Principal,
    thread_id: str | None,
    body: CronCreate,
) -> Cron:
    refuse_extra(body.model_extra)
    assistant = services.assistant(body.assistant_id)
    graph = services.graph_of(assistant)
    check_webhook(services, body.webhook)
    check_engine_keys((body.config or {}).get("configurable") or {})  # now, not at each firing
    payload = {name: getattr(body, name) for name in RUN_FIELDS if getattr(body, name) is not None}
    if assistant.recorded:  # its runs take its configuration, at its latest version then
        payload["assistant_id"] = assistant.assistant_id
    cron = Crons(services.store).schedule(
        graph_id=graph.graph_id,
        thread_id=thread_id,
        schedule=body.schedule,
        payload=payload,
        actor=principal.as_actor(),
        timezone=body.timezone,
        end_time=body.end_time,
        metadata=body.metadata,
        enabled=body.enabled,
        key_id=principal.key_id,
    )
    note(request, cron_id=cron.cron_id, thread_id=thread_id)
    return cron


def refuse_extra(extra: dict[str, Any] | None) -> None:
    """A run option a cron's run does not take, named (never taken and ignored)."""
    for name, value in (extra or {}).items():
        if value is not None:
            msg = (
                f"Invalid body.{name}: not taken by a cron's run (it takes {', '.join(RUN_FIELDS)})"
            )
            raise Problem(422, msg, code="invalid-request")


def cron_json(cron: Cron) -> dict[str, Any]:
    """A cron as read from its events, as the read model's rows are answered."""
    due = cron.next_due()
    return row_json(
        CronRow(
            cron.cron_id,
            cron.graph_id,
            cron.thread_id,
            cron.schedule,
            cron.timezone,
            cron.end_time,
            cron.payload,
            cron.metadata,
            cron.enabled,
            cron.scheduled_by.get("id"),
            None if due is None else utc_text(due),
            utc_text(cron.created_on),
            utc_text(cron.modified_on),
        )
    )


def row_json(row: CronRow) -> dict[str, Any]:
    return {
        "cron_id": row.cron_id,
        "assistant_id": row.payload.get("assistant_id") or assistant_id(row.graph_id),
        "thread_id": row.thread_id,
        "on_run_completed": None if row.thread_id else "keep",
        "end_time": row.end_time,
        "schedule": row.schedule,
        "timezone": row.timezone,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
        "payload": row.payload,
        "user_id": row.user_id,
        "next_run_date": row.next_run_date,
        "metadata": row.metadata,
        "enabled": row.enabled,
    }
