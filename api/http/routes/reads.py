"""Who saw what (`GET /audit/reads`): the reads on record, for auditors."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query

from api.http.auth import Auditor
from api.http.deps import ServicesDep
from api.http.problems import Problem, problem_responses
from api.http.routes.audit import _moment as moment
from projections.read_records import ReadRecords
from projections.timestamps import utc_text

router = APIRouter(tags=["audit"])
CURSOR = re.compile(r"(\d{1,19})-(\d{1,9})")


@router.get(
    "/audit/reads",
    summary="Who read what: payloads, the queue, audit timelines, reports and evidence exports",
    responses=problem_responses(403, 422),
)
def reads(
    services: ServicesDep,
    _: Auditor,
    thread_id: Annotated[str | None, Query(description="reads that showed this thread")] = None,
    actor: Annotated[str | None, Query(description="a principal's id")] = None,
    kind: Literal["queue", "payload", "timeline", "report", "export"] | None = None,
    since: Annotated[str | None, Query(description="ISO 8601: first read at or after")] = None,
    until: Annotated[str | None, Query(description="ISO 8601, excluded")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: Annotated[str | None, Query(description="`next_cursor` of the last page")] = None,
) -> dict[str, Any]:
    """Each read is on record once per reader, thing read and window (the server's
    `read_window_seconds`, 300 by default): `at` is the first read of it in the window
    `window_start` begins. `via` says through what: http, ui or cli. Oldest first."""
    after = None
    if cursor is not None:
        found = CURSOR.fullmatch(cursor)
        if found is None:
            msg = f"Invalid query.cursor: {cursor!r} is not a `next_cursor` (like 12-0)"
            raise Problem(422, msg, code="invalid-request")
        after = (int(found[1]), int(found[2]))
    start, end = moment("since", since), moment("until", until)
    services.read_models.catch_up_to_head()
    found_reads = ReadRecords(services.read_models.db).reads(
        thread_id=thread_id,
        actor_id=actor,
        kind=kind,
        since=None if start is None else utc_text(start),
        until=None if end is None else utc_text(end),
        after=after,
        limit=limit,
    )
    items = [read.json() for read in found_reads]
    return {"data": items, "next_cursor": items[-1]["cursor"] if len(items) == limit else None}
