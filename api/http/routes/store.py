"""LangGraph's long-term memory store (`client.store`): items under keys in namespaces.

Each write and deletion is an event with who made it (`domain/memory`), so an item's
history is on the record (`GET /store/items/history`, for auditors); search and the
list of namespaces read the read model (`projections/memory_items.py`), caught up to
the log's head first, so that a client reads its own writes. Agents and admins
write; every role reads. There is no vector index (a search's `query`, a put's
`index`) and no per-item TTL (retention is policy-bound): asking for either is a 422.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from api.http.auth import Auditor, Reader, Runner, note
from api.http.deps import ServicesDep
from api.http.positions import set_position
from api.http.problems import Problem, problem_responses
from api.http.responses import (
    StoreItem,
    StoreItemHistory,
    StoreItems,
    StoreNamespaceList,
    answers,
)
from api.http.schemas import StoreDelete, StoreNamespaces, StorePut, StoreSearch
from domain.memory.filters import check_filter
from domain.memory.item import MemoryItem, check_namespace
from domain.memory.items import MemoryItems
from projections.memory_items import MemoryIndex, StoredItem
from projections.timestamps import utc_text
from service.services import Services

router = APIRouter(tags=["store (LangGraph)"])
NO_INDEX = "no vector index is set up: search by namespace prefix and filter"
NO_TTL = "an item's retention is set by policy, not per item"

Namespace = Annotated[
    str, Query(description="The namespace's labels joined by '.', as LangGraph's SDKs send it")
]


def refuse(field: str, why: str) -> Problem:
    return Problem(422, f"Invalid {field}: not supported; {why}", code="invalid-request")


def labels(namespace: str) -> list[str]:
    return namespace.split(".") if namespace else []


@router.put(
    "/store/items",
    summary="Store an item (recorded: who, when), or change its value",
    status_code=204,
    responses=problem_responses(403),
    response_class=Response,
)
def put_item(
    body: StorePut, request: Request, services: ServicesDep, principal: Runner
) -> Response:
    if body.index not in (None, False):
        raise refuse("body.index", NO_INDEX)
    if body.ttl is not None:
        raise refuse("body.ttl", NO_TTL)
    note(request, namespace=".".join(body.namespace), key=body.key)
    position = MemoryItems(services.store).put(
        body.namespace, body.key, body.value, principal.as_actor()
    )
    return written(position)


@router.get(
    "/store/items",
    summary="Get an item",
    responses={**answers(StoreItem), **problem_responses(403, 404)},
)
def get_item(
    services: ServicesDep,
    _: Reader,
    key: Annotated[str, Query()],
    namespace: Namespace = "",
    refresh_ttl: bool | None = None,
) -> dict[str, Any]:
    if refresh_ttl:
        raise refuse("refresh_ttl", NO_TTL)
    return item_json(MemoryItems(services.store).get(labels(namespace), key))


@router.delete(
    "/store/items",
    summary="Delete an item from the store's reads (recorded: who, when; its history stays)",
    status_code=204,
    responses=problem_responses(403),
    response_class=Response,
)
def delete_item(
    body: StoreDelete, request: Request, services: ServicesDep, principal: Runner
) -> Response:
    note(request, namespace=".".join(body.namespace), key=body.key)
    position = MemoryItems(services.store).delete(body.namespace, body.key, principal.as_actor())
    return written(position)


def written(position: int | None) -> Response:
    """204, with the log position of what was recorded (none: nothing was)."""
    response = Response(status_code=204)
    set_position(response, position)
    return response


@router.post(
    "/store/items/search",
    summary="Search items under a namespace prefix, by a filter on their values",
    responses={**answers(StoreItems), **problem_responses(403, 503)},
)
async def search_items(body: StoreSearch, services: ServicesDep, _: Reader) -> dict[str, Any]:
    if body.query is not None:
        raise refuse("body.query", NO_INDEX)
    if body.refresh_ttl:
        raise refuse("body.refresh_ttl", NO_TTL)
    prefix = (
        check_namespace(body.namespace_prefix, "namespace_prefix") if body.namespace_prefix else []
    )
    conditions = check_filter(body.filter)
    found = await run_in_threadpool(_search, services, prefix, conditions, body.limit, body.offset)
    return {"items": [{**stored_json(item), "score": None} for item in found]}


def _search(
    services: Services, prefix: list[str], conditions: dict[str, Any], limit: int, offset: int
) -> list[StoredItem]:
    services.read_models.catch_up_to_head()
    return MemoryIndex(services.read_models.db).search(prefix, conditions, limit, offset)


@router.post(
    "/store/namespaces",
    summary="List the namespaces that hold items",
    responses={**answers(StoreNamespaceList), **problem_responses(403, 503)},
)
async def list_namespaces(
    body: StoreNamespaces, services: ServicesDep, _: Reader
) -> dict[str, Any]:
    prefix = check_namespace(body.prefix, "prefix") if body.prefix else []
    suffix = check_namespace(body.suffix, "suffix") if body.suffix else []

    def namespaces() -> list[list[str]]:
        services.read_models.catch_up_to_head()
        index = MemoryIndex(services.read_models.db)
        return index.namespaces(prefix, suffix, body.max_depth, body.limit, body.offset)

    return {"namespaces": await run_in_threadpool(namespaces)}


@router.get(
    "/store/items/history",
    summary="An item's recorded changes: each write and deletion, with who and when",
    responses={**answers(StoreItemHistory), **problem_responses(403)},
)
def item_history(
    services: ServicesDep, _: Auditor, key: Annotated[str, Query()], namespace: Namespace = ""
) -> dict[str, Any]:
    changes = MemoryItems(services.store).history(labels(namespace), key)
    return {
        "namespace": labels(namespace),
        "key": key,
        "changes": [
            {
                "kind": change.kind,
                "value": change.value,
                "actor": change.actor,
                "at": utc_text(change.at),
                "version": change.version,
            }
            for change in changes
        ],
    }


def item_json(item: MemoryItem) -> dict[str, Any]:
    return {
        "namespace": item.namespace,
        "key": item.key,
        "value": item.value,
        "created_at": utc_text(item.created_on),
        "updated_at": utc_text(item.modified_on),
    }


def stored_json(item: StoredItem) -> dict[str, Any]:
    return {
        "namespace": item.namespace,
        "key": item.key,
        "value": item.value,
        "created_at": item.created_at,
        "updated_at": item.updated_at,
    }
