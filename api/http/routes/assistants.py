"""LangGraph-compatible assistants: one per served graph, with LangGraph's ids."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Query, Response

from api.http.auth import Reader
from api.http.deps import ServicesDep
from api.http.problems import Problem, problem_responses
from api.http.schemas import AssistantCount, AssistantSearch
from service import assistant_graphs
from service.assistant_ids import assistant_id as assistant_uuid
from service.services import Services
from service.wire import assistant_json

router = APIRouter(tags=["assistants (LangGraph)"])


def matching(services: Services, query: AssistantSearch | AssistantCount) -> list[dict[str, Any]]:
    """The assistants (one per served graph) of the query's graph, name and metadata."""
    found = [
        assistant_json(name, services.started_at)
        for name in sorted(services.graphs)
        if query.graph_id in (None, name) and query.name in (None, name)
    ]
    metadata = query.metadata or {}
    return [a for a in found if all(a["metadata"].get(k) == v for k, v in metadata.items())]


@router.post(
    "/assistants/search",
    summary="List the served graphs as assistants",
    responses=problem_responses(403),
)
def search_assistants(
    services: ServicesDep,
    _: Reader,
    response: Response,
    body: Annotated[AssistantSearch | None, Body()] = None,
) -> list[dict[str, Any]]:
    """Filters: `graph_id`, `name`, `metadata`; in the order of `sort_by` and
    `sort_order` (then the graph's name); paged with `limit` and `offset`."""
    query = body or AssistantSearch()
    found = matching(services, query)
    found.sort(key=lambda a: (a[query.sort_by], a["graph_id"]), reverse=query.sort_order == "desc")
    page = found[query.offset : query.offset + query.limit]
    if query.offset + query.limit < len(found):
        response.headers["X-Pagination-Next"] = str(query.offset + query.limit)
    if query.select is not None:
        page = [{field: a[field] for field in query.select} for a in page]
    return page


@router.post(
    "/assistants/count",
    summary="Count the assistants of a graph, name and metadata",
    responses=problem_responses(403),
)
def count_assistants(
    services: ServicesDep, _: Reader, body: Annotated[AssistantCount | None, Body()] = None
) -> int:
    return len(matching(services, body or AssistantCount()))


@router.get(
    "/assistants/{assistant_id}",
    summary="Get an assistant by its id (or its graph's name)",
    responses=problem_responses(403, 404),
)
def get_assistant(assistant_id: str, services: ServicesDep, _: Reader) -> dict[str, Any]:
    return assistant_json(served_name(services, assistant_id), services.started_at)


def served(services: Services, assistant_id: str) -> assistant_graphs.ServedGraph:
    return services.graphs[served_name(services, assistant_id)]


def served_name(services: Services, assistant_id: str) -> str:
    """The served graph's name, by its name or its assistant id; 404 otherwise."""
    for name in services.graphs:
        if assistant_id in (name, assistant_uuid(name)):
            return name
    msg = f"Assistant {assistant_id!r} not found: serving {', '.join(sorted(services.graphs))}"
    raise Problem(404, msg, code="assistant-not-found")


@router.get(
    "/assistants/{assistant_id}/graph",
    summary="The assistant's graph: its nodes and edges, as LangGraph draws them",
    responses=problem_responses(403, 404),
)
def get_assistant_graph(
    assistant_id: str,
    services: ServicesDep,
    _: Reader,
    xray: Annotated[bool | int, Query(description="Draw subgraphs (to this depth)")] = False,
) -> dict[str, Any]:
    return assistant_graphs.drawing(served(services, assistant_id), xray)


@router.get(
    "/assistants/{assistant_id}/schemas",
    summary="The assistant's input, output, state and context schemas (JSON Schema)",
    responses=problem_responses(403, 404),
)
def get_assistant_schemas(assistant_id: str, services: ServicesDep, _: Reader) -> dict[str, Any]:
    return assistant_graphs.schemas(served(services, assistant_id))


@router.get(
    "/assistants/{assistant_id}/subgraphs",
    summary="The schemas of the assistant's subgraphs, by namespace",
    responses=problem_responses(403, 404),
)
def get_assistant_subgraphs(
    assistant_id: str, services: ServicesDep, _: Reader, recurse: bool = False
) -> dict[str, Any]:
    return assistant_graphs.subgraphs(served(services, assistant_id), None, recurse)


@router.get(
    "/assistants/{assistant_id}/subgraphs/{namespace}",
    summary="The schemas of the assistant's subgraphs in a namespace",
    responses=problem_responses(403, 404),
)
def get_assistant_subgraphs_in(
    assistant_id: str, namespace: str, services: ServicesDep, _: Reader, recurse: bool = False
) -> dict[str, Any]:
    return assistant_graphs.subgraphs(served(services, assistant_id), namespace, recurse)


# -- versions, and what configuration decides ---------------------------------------

VERSION = 1  # a served graph is its assistant's one version
CONFIGURED = (
    "assistants are the served graphs, configured by `holdpoint serve` (--graph, "
    "holdpoint.toml, langgraph.json): {what} over HTTP is not supported"
)


@router.post(
    "/assistants/{assistant_id}/versions",
    summary="The assistant's versions: one, the served graph",
    responses=problem_responses(403, 404),
)
def list_assistant_versions(
    assistant_id: str, services: ServicesDep, _: Reader
) -> list[dict[str, Any]]:
    assistant = assistant_json(served_name(services, assistant_id), services.started_at)
    return [{k: v for k, v in assistant.items() if k != "updated_at"}]


@router.post(
    "/assistants/{assistant_id}/latest",
    summary="Make a version the latest: the one version there is",
    responses=problem_responses(403, 404),
)
def set_latest_assistant_version(
    assistant_id: str,
    services: ServicesDep,
    _: Reader,
    version: Annotated[int, Body(embed=True)],
) -> dict[str, Any]:
    name = served_name(services, assistant_id)
    if version != VERSION:
        msg = f"Assistant {assistant_id!r} has version {VERSION} only, not {version}"
        raise Problem(404, msg, code="version-not-found")
    return assistant_json(name, services.started_at)


@router.post(
    "/assistants",
    summary="Not supported: assistants are the served graphs",
    responses=problem_responses(403, 422),
)
def create_assistant(_: Reader) -> None:
    raise Problem(422, CONFIGURED.format(what="creating one"), code="assistants-configured")


@router.patch(
    "/assistants/{assistant_id}",
    summary="Not supported: assistants are the served graphs",
    responses=problem_responses(403, 404, 422),
)
def update_assistant(assistant_id: str, services: ServicesDep, _: Reader) -> None:
    what = f"updating {served_name(services, assistant_id)!r}"
    raise Problem(422, CONFIGURED.format(what=what), code="assistants-configured")


@router.delete(
    "/assistants/{assistant_id}",
    summary="Not supported: assistants are the served graphs",
    responses=problem_responses(403, 404, 422),
)
def delete_assistant(assistant_id: str, services: ServicesDep, _: Reader) -> None:
    what = f"deleting {served_name(services, assistant_id)!r}"
    raise Problem(422, CONFIGURED.format(what=what), code="assistants-configured")
