"""The auditor's thread search: threads by graph, status, created and updated dates,
metadata and decider, newest first, a keyset page at a time (the thread index's
search; the filters and the cursor stay in the URL, so a page can be bookmarked)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from fastapi import APIRouter, Request, Response

from api.http.deps import ServicesDep
from api.http.problems import Problem
from api.http.reads import record_reads
from api.ui.access import AuditingViewer
from api.ui.forms import page_size
from api.ui.pages import PageRoute, render
from domain.oversight.read_log import Read, read_target
from projections.thread_index import STATUSES, ThreadIndex

router = APIRouter(route_class=PageRoute)
PAGE_SIZE = 25
MAX_PAGE_SIZE = 100
DATES = ("created_from", "created_to", "updated_from", "updated_to")
FILTERS = ("graph_id", "status", *DATES, "metadata", "decider")


@dataclass(frozen=True)
class ThreadFilters:
    """What the search form asks for, as typed (empty fields left out)."""

    given: dict[str, str]

    def query(self, **more: str) -> dict[str, str]:
        """The filters as URL parameters, with `more` (the next page's cursor)."""
        return {**self.given, **more}

    def search_arguments(self) -> dict[str, Any]:
        """The thread index's search arguments; a filter that cannot be read is a 422."""
        given = self.given
        status = given.get("status")
        if status is not None and status not in STATUSES:
            raise Problem(422, f"Invalid status {status!r}: use one of {', '.join(STATUSES)}")
        return {
            "graph_id": given.get("graph_id"),
            "status": status,
            "created_after": _start_of(given, "created_from"),
            "created_before": _end_of(given, "created_to"),
            "updated_after": _start_of(given, "updated_from"),
            "updated_before": _end_of(given, "updated_to"),
            "metadata": _metadata(given.get("metadata")),
            "decided_by": given.get("decider"),
        }


def filters_of(request: Request) -> ThreadFilters:
    query = request.query_params
    given = {name: query[name].strip() for name in FILTERS if query.get(name, "").strip()}
    return ThreadFilters(given)


def _day(given: dict[str, str], name: str) -> date | None:
    text = given.get(name)
    if text is None:
        return None
    try:
        day = date.fromisoformat(text)
    except ValueError:
        day = None
    if day is None or not 1900 <= day.year <= 9000:
        label = name.replace("_", " ")
        msg = f"Invalid {label}: {text!r} is not a date like 2026-03-01 (years 1900 to 9000)"
        raise Problem(422, msg)
    return day


def _start_of(given: dict[str, str], name: str) -> datetime | None:
    day = _day(given, name)
    return None if day is None else datetime.combine(day, datetime.min.time(), UTC)


def _end_of(given: dict[str, str], name: str) -> datetime | None:
    """The end of a 'to' day: the day is included."""
    day = _day(given, name)
    return (
        None if day is None else datetime.combine(day + timedelta(days=1), datetime.min.time(), UTC)
    )


def _metadata(text: str | None) -> dict[str, str] | None:
    """`customer=globex` (several separated by commas) as {key: value}."""
    if text is None:
        return None
    pairs: dict[str, str] = {}
    for part in text.split(","):
        key, equals, value = part.partition("=")
        if not equals or not key.strip():
            msg = (
                f"Invalid metadata filter {part.strip()!r}: write key=value (e.g. customer=globex)"
            )
            raise Problem(422, msg)
        pairs[key.strip()] = value.strip()
    return pairs


@router.get("/threads")
def thread_search(request: Request, services: ServicesDep, viewer: AuditingViewer) -> Response:
    filters = filters_of(request)
    arguments = filters.search_arguments()
    after = request.query_params.get("after") or None
    size = request.query_params.get("limit", "").strip()
    limit = page_size(size, PAGE_SIZE, MAX_PAGE_SIZE)
    kept = {"limit": size} if size else {}  # a page size asked for stays in the URL
    services.read_models.catch_up_to_head()
    page = ThreadIndex(services.read_models.db).search(**arguments, limit=limit, after=after)
    read_query = filters.query(**({"after": after} if after else {}))
    record_reads(
        services, viewer.principal, Read("report", read_target("threads", read_query), "ui")
    )
    return render(
        request,
        "threads.html",
        viewer=viewer,
        filters=filters.given,
        graphs=sorted(services.graphs),
        statuses=STATUSES,
        page=page,
        next_query=filters.query(**kept, after=page.next_cursor) if page.next_cursor else None,
        first_query=filters.query(**kept) if after else None,
    )
