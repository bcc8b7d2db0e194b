"""A run's server-sent events: its chunks, numbered, from memory or the store.

The process that runs a run streams its chunks from memory (service/run_record.py);
any other process, or this one once the run was queued or handed over, follows it
through the store (service/run_follow.py). Each event but the first (`metadata`) has
its number in the run's stream as its `id`, so that a dropped stream resumes after
`Last-Event-ID`; a stream its caller asked to cancel its run when dropped
(`on_disconnect: cancel`) does so in the caller's name.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi.responses import StreamingResponse

from api.http.positions import POSITION_HEADER
from domain.access.identity import Principal
from service import run_follow
from service.errors import RunNotActiveError
from service.run_record import DONE, RunRecord
from service.run_store import StoredRun
from service.services import Services
from service.wire import output_json

KEEPALIVE_SECONDS = 15.0
KEEPALIVE = b": keepalive\n\n"
# A run's event: its name, its data, and its number in the run's stream (none: `metadata`)
Event = tuple[str, Any, int | None]


def run_headers(record: RunRecord | StoredRun, tail: str = "") -> dict[str, str]:
    """An answer about a run: where it is, where to join it (`tail`), and the log
    position it has reached."""
    path = f"/threads/{record.thread_id}/runs/{record.run_id}"
    headers = {"Content-Location": path}
    if tail:
        headers["Location"] = path + tail
    if record.position is not None:
        headers[POSITION_HEADER] = str(record.position)
    return headers


def streams(event_name: str, modes: list[str]) -> bool:
    """Whether a run's event is one of the stream modes asked for: its mode (before any
    `|namespace` of a subgraph's), LangGraph's `messages` for `messages-tuple`, and the
    server's `messages/...` events for `messages`."""
    mode = event_name.partition("|")[0]
    if mode == "messages":
        return "messages-tuple" in modes
    if mode.startswith("messages/"):
        return "messages" in modes
    return mode in modes


async def sse(
    services: Services,
    run_id: str,
    record: RunRecord | None,
    modes: list[str],
    after: int = 0,
    cancel_by: Principal | None = None,
) -> AsyncIterator[bytes]:
    """The run's stream; with `cancel_by`, dropped before the run ended, the run is
    cancelled in that principal's name (`on_disconnect: cancel`)."""
    ended = False
    try:
        async for item in run_events(services, run_id, record, modes, after):
            yield KEEPALIVE if item is None else event(*item)
        ended = True
    finally:
        if cancel_by is not None and not ended:
            asyncio.get_running_loop().run_in_executor(
                None, _cancel_dropped, services, run_id, cancel_by
            )


def _cancel_dropped(services: Services, run_id: str, principal: Principal) -> None:
    """Cancel a run whose stream was dropped; it may have ended meanwhile."""
    with contextlib.suppress(RunNotActiveError):
        services.runs.cancel(run_id, principal.as_actor(), "its stream was dropped")


async def run_events(
    services: Services,
    run_id: str,
    record: RunRecord | None,
    modes: list[str],
    after: int = 0,
) -> AsyncIterator[Event | None]:
    """The run's events (None: a keepalive is due): from this process's memory while it
    runs here, then (queued, taken over, or run by another process) followed through
    the store.

    Each event but the first (`metadata`) has its number in the run's stream; `after`:
    the `Last-Event-ID` of a resumed stream, whose events up to it are left out."""
    attempt = record.attempt if record is not None else 1
    yield "metadata", {"run_id": run_id, "attempt": attempt}, None
    number = 0
    after_version: int | None = None
    if record is not None:
        queue = record.subscribe()
        while True:
            try:
                item = await asyncio.wait_for(queue.get(), KEEPALIVE_SECONDS)
            except TimeoutError:
                yield None
                continue
            if item is DONE:
                break
            number, (mode, data) = item
            if number > after and streams(mode, modes):
                yield mode, output_json(data), number
        if not record.handed_over:
            if record.output is not None and "__error__" in record.output:
                yield "error", record.output["__error__"], number + 1
            return
        if record.status != "pending":  # its beginning was streamed here
            thread = await asyncio.to_thread(services.store.thread, record.thread_id)
            after_version = 0 if thread is None else thread.version
    stored = await asyncio.to_thread(services.runs.store.get, run_id)
    if stored is None:
        return
    followed = run_follow.chunks(
        services.store, services.runs.store, stored, tuple(modes), after_version=after_version
    )
    async for mode, data in followed:
        number += 1
        if number > after and streams(mode, modes):
            yield mode, output_json(data), number
    ended = await run_follow.until_done(services.runs.store, run_id)
    if ended.output is not None and "__error__" in ended.output:
        yield "error", ended.output["__error__"], number + 1


def event(name: str, data: Any, event_id: int | str | None = None) -> bytes:
    """One server-sent event; `event_id`: its `id`, which a resumed stream names."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    id_line = "" if event_id is None else f"id: {event_id}\n"
    return f"event: {name}\ndata: {text}\n{id_line}\n".encode()


def run_modes(run: RunRecord | StoredRun) -> list[str]:
    """The stream modes the run was started with."""
    kwargs = run.kwargs if isinstance(run, RunRecord) else run.request.get("kwargs") or {}
    return list(kwargs.get("stream_mode") or ["values"])


def streaming(
    services: Services,
    run: RunRecord | StoredRun,
    record: RunRecord | None,
    *,
    modes: list[str] | None = None,
    after: int = 0,
    cancel_by: Principal | None = None,
) -> StreamingResponse:
    """The run's stream, in `modes` (default: the run's own), after the event numbered
    `after`; `record`: its live record in this process, if it has one; `cancel_by`: who
    cancels the run if the stream is dropped before it ends."""
    modes = modes or run_modes(run)
    return StreamingResponse(
        sse(services, run.run_id, record, modes, after, cancel_by),
        media_type="text/event-stream",
        # X-Accel-Buffering: a proxy (nginx) passes each event on at once
        headers={
            **run_headers(run, "/stream"),
            "Cache-Control": "no-store",
            "X-Accel-Buffering": "no",
        },
    )
