"""LangGraph-compatible assistants: one per served graph, with LangGraph's ids."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Response

from api.http.auth import Reader
from api.http.deps import ServicesDep
from api.http.problems import Problem, problem_responses
from service.wire import assistant_id as assistant_uuid
from service.wire import assistant_json

router = APIRouter(tags=["assistants (LangGraph)"])


@router.post(
    "/assistants/search",
    summary="List the served graphs as assistants",
    responses=problem_responses(403),
)
def search_assistants(
    services: ServicesDep,
    _: Reader,
    response: Response,
    body: Annotated[dict[str, Any] | None, Body()] = None,
) -> list[dict[str, Any]]:
    """Filters: `graph_id`, `name`, `metadata`; paged with `limit` and `offset`."""
    query = body or {}
    try:
        limit, offset = int(query.get("limit", 10)), int(query.get("offset", 0))
    except (TypeError, ValueError):
        raise Problem(422, "Invalid body.limit: limit and offset must be whole numbers") from None
    found = [
        assistant_json(name, services.started_at)
        for name in sorted(services.graphs)
        if query.get("graph_id") in (None, name) and query.get("name") in (None, name)
    ]
    metadata = query.get("metadata") or {}
    found = [a for a in found if all(a["metadata"].get(k) == v for k, v in metadata.items())]
    page = found[offset : offset + limit]
    if offset + limit < len(found):
        response.headers["X-Pagination-Next"] = str(offset + limit)
    return page


@router.get(
    "/assistants/{assistant_id}",
    summary="Get an assistant by its id (or its graph's name)",
    responses=problem_responses(403, 404),
)
def get_assistant(assistant_id: str, services: ServicesDep, _: Reader) -> dict[str, Any]:
    for name in services.graphs:
        if assistant_id in (name, assistant_uuid(name)):
            return assistant_json(name, services.started_at)
    msg = f"Assistant {assistant_id!r} not found: serving {', '.join(sorted(services.graphs))}"
    raise Problem(404, msg, code="assistant-not-found")
