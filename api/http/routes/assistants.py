"""LangGraph-compatible assistants: each served graph's own, and assistants with recorded
configuration (domain/assistants), created, updated in versions and deleted over HTTP.

Who may: any key reads them; agents and admins make and change them (as they start
runs with any configuration of their own). A served graph's own assistant can be
changed (it is taken up on record at its first change) but not deleted: runs name
their graph by it.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Query, Request, Response

from api.http.auth import Reader, Runner, note
from api.http.deps import ServicesDep
from api.http.problems import Problem, problem_responses
from api.http.schemas import (
    AssistantCount,
    AssistantCreate,
    AssistantSearch,
    AssistantUpdate,
    AssistantVersions,
)
from domain.assistants.assistants import Assistants
from projections.assistant_index import AssistantIndex
from service import assistant_catalog, assistant_graphs
from service.assistant_catalog import Found
from service.services import Services
from service.wire import assistant_json, assistant_version_json

router = APIRouter(tags=["assistants (LangGraph)"])


def matching(services: Services, query: AssistantSearch | AssistantCount) -> list[dict[str, Any]]:
    """The assistants of the query's graph, name and metadata, as JSON."""
    services.read_models.catch_up_to_head()
    rows = AssistantIndex(services.read_models.db).assistants(query.graph_id)
    every = assistant_catalog.listed(services.graphs, services.started_at, rows)
    return [
        assistant_json(found)
        for found in every
        if assistant_catalog.matches(found, query.graph_id, query.name, query.metadata)
    ]


@router.post(
    "/assistants/search",
    summary="Search the assistants: each served graph's own and those on record",
    responses=problem_responses(403),
)
def search_assistants(
    services: ServicesDep,
    _: Reader,
    response: Response,
    body: Annotated[AssistantSearch | None, Body()] = None,
) -> list[dict[str, Any]]:
    """Filters: `graph_id`, `name` (a part of it, any case), `metadata` (contained); in
    the order of `sort_by` and `sort_order` (default: the newest first; ties by the
    graph's name, then the id); paged with `limit` and `offset`."""
    query = body or AssistantSearch()
    found = matching(services, query)
    found.sort(key=lambda a: (a["graph_id"], a["assistant_id"]))  # ties: by graph, then id
    found.sort(key=lambda a: a[query.sort_by], reverse=query.sort_order == "desc")
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


@router.post(
    "/assistants",
    summary="Create an assistant: a served graph with configuration of its own, on record",
    responses=problem_responses(403, 404, 409, 422),
)
def create_assistant(
    body: AssistantCreate, request: Request, services: ServicesDep, principal: Runner
) -> dict[str, Any]:
    """Recorded as `AssistantCreated` (version 1) with who made it. An id already taken:
    409, or the existing assistant with `"if_exists": "do_nothing"`."""
    refuse_extra(body.model_extra)
    check_graph(services, body.graph_id)
    if body.assistant_id is not None:
        existing = assistant_catalog.find(
            services.store, services.graphs, services.started_at, body.assistant_id
        )
        if existing is not None and not existing.recorded:  # a served graph's own
            if body.if_exists == "do_nothing":
                return assistant_json(existing)
            msg = f"Assistant {body.assistant_id!r} already exists: it is a served graph's own"
            raise Problem(409, msg, code="assistant-exists")
    made = Assistants(services.store).create(
        graph_id=body.graph_id,
        actor=principal.as_actor(),
        assistant_id=body.assistant_id,
        config=body.config,
        context=body.context,
        metadata=body.metadata,
        name=body.name,
        description=body.description,
        if_exists=body.if_exists,
    )
    note(request, assistant_id=made.assistant_id)
    return assistant_json(assistant_catalog.at_latest(made))


@router.get(
    "/assistants/{assistant_id}",
    summary="Get an assistant by its id (or its graph's name, for a served graph's own)",
    responses=problem_responses(403, 404),
)
def get_assistant(assistant_id: str, services: ServicesDep, _: Reader) -> dict[str, Any]:
    return assistant_json(found_or_404(services, assistant_id))


@router.patch(
    "/assistants/{assistant_id}",
    summary="Update an assistant: a new version, made the latest",
    responses=problem_responses(403, 404, 409, 422),
)
def update_assistant(
    assistant_id: str,
    body: AssistantUpdate,
    request: Request,
    services: ServicesDep,
    principal: Runner,
) -> dict[str, Any]:
    """Recorded as `AssistantUpdated`: every field of the new version, with who made it.
    Fields left out keep the latest's; `metadata` is merged into the latest's."""
    refuse_extra(body.model_extra)
    found = found_or_404(services, assistant_id)
    if body.graph_id is not None:
        check_graph(services, body.graph_id)
    changes = body.model_dump(exclude_none=True)
    base = None if found.recorded else found.version
    updated = Assistants(services.store).update(
        found.assistant_id, changes, principal.as_actor(), base=base
    )
    note(request, assistant_id=found.assistant_id)
    return assistant_json(assistant_catalog.at_latest(updated))


@router.delete(
    "/assistants/{assistant_id}",
    summary="Delete an assistant (recorded: its events stay, and its threads)",
    responses=problem_responses(403, 404, 422),
    status_code=204,
)
def delete_assistant(
    assistant_id: str,
    request: Request,
    services: ServicesDep,
    principal: Runner,
    delete_threads: bool = False,
) -> Response:
    """Recorded as `AssistantDeleted`. Its threads stay, and a thread it began still
    runs with the configuration it began with when a reviewer decides."""
    found = found_or_404(services, assistant_id)
    if delete_threads:
        msg = (
            "Invalid query.delete_threads: the store is append-only; threads leave it "
            "only by retention"
        )
        raise Problem(422, msg, code="append-only")
    if assistant_catalog.served_graph_of(services.graphs, found.assistant_id) is not None:
        msg = (
            f"Assistant {found.assistant_id!r} is graph {found.graph_id!r}'s own, which "
            "this server serves: it goes when the graph is no longer served"
        )
        raise Problem(422, msg, code="assistant-served")
    Assistants(services.store).delete(found.assistant_id, principal.as_actor())
    note(request, assistant_id=found.assistant_id)
    return Response(status_code=204)


@router.post(
    "/assistants/{assistant_id}/versions",
    summary="An assistant's versions, newest first",
    responses=problem_responses(403, 404),
)
def list_assistant_versions(
    assistant_id: str,
    services: ServicesDep,
    _: Reader,
    body: Annotated[AssistantVersions | None, Body()] = None,
) -> list[dict[str, Any]]:
    query = body or AssistantVersions()
    found = found_or_404(services, assistant_id)
    versions = [found.version]
    if found.recorded:
        versions = list(Assistants(services.store).get(found.assistant_id).versions.values())
    wanted = [
        assistant_version_json(version)
        for version in sorted(versions, key=lambda v: v.version, reverse=True)
        if assistant_catalog.contains(version.metadata, query.metadata or {})
    ]
    return wanted[query.offset : query.offset + query.limit]


@router.post(
    "/assistants/{assistant_id}/latest",
    summary="Make one of an assistant's versions the one that runs",
    responses=problem_responses(403, 404, 409),
)
def set_latest_assistant_version(
    assistant_id: str,
    request: Request,
    services: ServicesDep,
    principal: Runner,
    version: Annotated[int, Body(embed=True)],
) -> dict[str, Any]:
    """Recorded as `LatestVersionSelected` (nothing, if it is the latest already)."""
    found = found_or_404(services, assistant_id)
    if not found.recorded:
        services.assistant(found.assistant_id, version)  # version 1 only: else 404
        return assistant_json(found)
    chosen = Assistants(services.store).set_latest(
        found.assistant_id, version, principal.as_actor()
    )
    note(request, assistant_id=found.assistant_id)
    return assistant_json(assistant_catalog.at_latest(chosen))


def found_or_404(services: Services, assistant_id: str) -> Found:
    """The assistant, by its id or (a served graph's own) its graph's name; else 404."""
    found = assistant_catalog.find(
        services.store, services.graphs, services.started_at, assistant_id
    )
    if found is None:
        msg = f"Assistant {assistant_id!r} not found: serving {', '.join(sorted(services.graphs))}"
        raise Problem(404, msg, code="assistant-not-found")
    return found


def check_graph(services: Services, graph_id: str) -> None:
    if graph_id not in services.graphs:
        msg = f"Graph {graph_id!r} not found: serving {', '.join(sorted(services.graphs))}"
        raise Problem(404, msg, code="graph-not-found")


def refuse_extra(extra: dict[str, Any] | None) -> None:
    """A field an assistant does not have, named (never taken and ignored)."""
    for name in extra or {}:
        raise Problem(
            422, f"Invalid body.{name}: not a field of an assistant", code="invalid-request"
        )


def served(services: Services, assistant_id: str) -> assistant_graphs.ServedGraph:
    return services.graph_of(found_or_404(services, assistant_id))


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
