"""`POST /threads/search`: the thread index, then each thread read from the store.

LangGraph's `idle` is the index's `idle` (recorded, never run) and `completed`.
A thread that cannot be read (one of its events cannot be decoded: `/readyz` names
it) is left out, rather than failing the search of every other. Threads are in the
order of `sort_by` and `sort_order` (newest first by default), then of their ids;
threads reserved but not run yet (never in the index) are merged into that order.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import structlog

from api.http.schemas import ThreadCount, ThreadSearch
from domain.errors import ThreadUnreadableError
from domain.record.thread import WorkflowThread
from projections.thread_index import ThreadIndex
from service.errors import UnknownGraphError
from service.services import Services
from service.wire import WIRE_TO_INDEX_STATUS, reserved_thread_json, thread_json

PAGE = 200
log = structlog.get_logger()
# The index's statuses for each of LangGraph's: its `idle` is a thread never run or finished.
INDEX_STATUSES: dict[str, tuple[str, ...]] = {w: (i,) for w, i in WIRE_TO_INDEX_STATUS.items()}
INDEX_STATUSES["idle"] = ("idle", "completed")


def _as_text(value: Any) -> str:
    """A metadata value as the thread index compares it: its JSON text, strings bare."""
    return value if isinstance(value, str) else json.dumps(value)


def search_threads(services: Services, body: ThreadSearch) -> list[dict[str, Any]]:
    metadata = dict(body.metadata or {})
    graph_id = metadata.pop("graph_id", None)
    assistant = metadata.pop("assistant_id", None)
    if assistant is not None:
        try:
            named = services.assistant(str(assistant))
        except UnknownGraphError:
            return []
        graph_id = named.graph_id
        if named.recorded:  # the threads it ran last, as their metadata records
            metadata["assistant_id"] = named.assistant_id
    wanted = body.offset + body.limit
    if body.ids:
        threads = [_readable(services, thread_id) for thread_id in body.ids]
        found = [t for t in threads if t is not None and _matches(t, body, graph_id, metadata)]
        return _selected([thread_json(t) for t in found][body.offset : wanted], body)
    services.read_models.catch_up_to_head()
    index = ThreadIndex(services.read_models.db)
    sort_by = "updated_at" if body.sort_by == "state_updated_at" else body.sort_by
    descending = body.sort_order == "desc"
    results: list[dict[str, Any]] = []
    cursor = None
    while len(results) < wanted:
        page = index.search(
            graph_id=None if graph_id is None else str(graph_id),
            status=None if body.status is None else INDEX_STATUSES[body.status],
            created_after=body.created_after,
            created_before=body.created_before,
            metadata={key: _as_text(value) for key, value in metadata.items()},
            limit=PAGE,
            after=cursor,
            sort_by=sort_by,
            descending=descending,
        )
        for summary in page.items:
            thread = _readable(services, summary.thread_id)
            if thread is not None and _matches(thread, body, graph_id, metadata):
                results.append(thread_json(thread))
        cursor = page.next_cursor
        if cursor is None:
            break
    # The first `wanted` of both are the first `wanted` of their union
    results += _reservations(services, body, graph_id, metadata)
    results.sort(key=lambda found: (found[sort_by], found["thread_id"]), reverse=descending)
    return _selected(results[body.offset : wanted], body)


def count_threads(services: Services, body: ThreadCount) -> int:
    """How many threads a search with these filters finds: the index's count, where no
    filter needs each thread read (values do)."""
    search = ThreadSearch(metadata=body.metadata, values=body.values, status=body.status)
    metadata = dict(body.metadata or {})
    if body.values or {"graph_id", "assistant_id"} & set(metadata):
        return len(search_threads(services, search.model_copy(update={"limit": 10**9})))
    services.read_models.catch_up_to_head()
    page = ThreadIndex(services.read_models.db).search(
        status=None if body.status is None else INDEX_STATUSES[body.status],
        metadata={key: _as_text(value) for key, value in metadata.items()},
        limit=1,
    )
    return page.total + len(_reservations(services, search, None, metadata))


def _selected(threads: list[dict[str, Any]], body: ThreadSearch) -> list[dict[str, Any]]:
    if body.select is None:
        return threads
    return [{field: thread[field] for field in body.select} for thread in threads]


def _readable(services: Services, thread_id: str) -> WorkflowThread | None:
    """The thread, or None if never recorded or it cannot be read (logged)."""
    try:
        return services.store.thread(thread_id)
    except ThreadUnreadableError as error:
        log.warning(
            "search passes by a thread that cannot be read", thread_id=thread_id, error=str(error)
        )
        return None


def _matches(
    thread: WorkflowThread, body: ThreadSearch, graph_id: Any, metadata: dict[str, Any]
) -> bool:
    if graph_id is not None and thread.graph_id != graph_id:
        return False
    if any(thread.metadata.get(key) != value for key, value in metadata.items()):
        return False
    if not _created_within(thread.created_on, body):
        return False
    if body.status is not None and WIRE_TO_INDEX_STATUS[body.status] != thread.status:
        return False
    values = thread.current_values()
    return all(values.get(key) == value for key, value in (body.values or {}).items())


def _reservations(
    services: Services, body: ThreadSearch, graph_id: Any, metadata: dict[str, Any]
) -> list[dict[str, Any]]:
    """The reserved threads the search finds; one whose run has begun is in the index
    already (its reservation is dropped just after, maybe by another process)."""
    if graph_id is not None or body.values or body.status not in (None, "idle"):
        return []
    reserved = [
        r
        for r in reversed(services.reservations.all())
        if all(r.metadata.get(key) == value for key, value in metadata.items())
        and _created_within(r.created_at, body)
    ]
    recorded = ThreadIndex(services.read_models.db).recorded([r.thread_id for r in reserved])
    return [
        reserved_thread_json(r.thread_id, r.created_at, r.metadata)
        for r in reserved
        if r.thread_id not in recorded
    ]


def _created_within(created: datetime, body: ThreadSearch) -> bool:
    """Whether `created` is at or after `created_after` and before `created_before`."""
    if body.created_after is not None and created < body.created_after:
        return False
    return body.created_before is None or created < body.created_before
