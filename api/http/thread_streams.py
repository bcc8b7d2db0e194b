"""A thread's server-sent events (`threads.join_stream`), as LangGraph's server streams
a thread: the events of each of its runs in the order they were created, from those
queued or running when the stream is joined, and every run after them, until the
caller drops it.

`run_modes` streams each run's events in the run's own modes, and a `metadata` event
`{"status": "run_done", "run_id"}` at its end; `lifecycle`, only the `metadata` events
(a run's start and its end). An event's `id` is `<run id>:<number in the run's stream>`
(a run's start `<run id>:0`, its end `<run id>:end`), so that `Last-Event-ID` resumes
after it: the rest of that run, then the runs created after it. LangGraph's
`state_update` is not offered: a state edit is no run, and it is on the record
(`GET /threads/{id}/events`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

from fastapi.responses import StreamingResponse

from api.http.problems import Problem
from api.http.run_streams import KEEPALIVE, KEEPALIVE_SECONDS, event, run_events, run_modes
from service.run_follow import FIRST_DELAY, MAX_DELAY
from service.run_store import StoredRun
from service.services import Services

THREAD_MODES = ("run_modes", "lifecycle")
NOT_OFFERED = {
    "state_update": "a state edit is no run; it is on the record: GET /threads/{id}/events",
}
RUNS_LOOKED_AT = 50  # the thread's newest runs, among which the next one to follow is
END = "end"


@dataclass(frozen=True)
class Resume:
    """Where a resumed stream goes on: after event `number` of run `run_id` (None: after
    its end)."""

    run_id: str
    number: int | None


def thread_modes(asked: list[str]) -> list[str]:
    """The modes asked for (LangGraph's server reads `stream_modes`, its SDK sends
    `stream_mode`; either may be comma-separated), or a 422 naming the one not offered."""
    modes = [mode.strip() for value in asked for mode in value.split(",") if mode.strip()]
    for mode in modes:
        if mode in NOT_OFFERED:
            msg = f"Invalid stream mode {mode!r}: not offered; {NOT_OFFERED[mode]}"
            raise Problem(422, msg, code="invalid-request")
        if mode not in THREAD_MODES:
            msg = f"Invalid stream mode {mode!r}: a thread streams {' or '.join(THREAD_MODES)}"
            raise Problem(422, msg, code="invalid-request")
    return modes or ["run_modes"]


def resume_at(last_event_id: str | None) -> Resume | None:
    """The `Last-Event-ID` of a thread's stream, read, or a 422 saying what it is."""
    if last_event_id is None or not last_event_id.strip():
        return None
    run_id, _, number = last_event_id.strip().rpartition(":")
    if not run_id or not (number == END or (number.isascii() and number.isdigit())):
        msg = (
            f"Invalid Last-Event-ID {last_event_id[:60]!r}: it is the id of an event of this "
            "thread's stream, `<run id>:<number>` or `<run id>:end`"
        )
        raise Problem(422, msg, code="invalid-request")
    return Resume(run_id, None if number == END else int(number))


def streaming_thread(
    services: Services, thread_id: str, modes: list[str], resume: Resume | None
) -> StreamingResponse:
    """The stream, joined now: before its first byte, so that a run created once the
    caller has the answer's headers is one it streams."""
    joined_at = time.time()
    return StreamingResponse(
        thread_sse(services, thread_id, modes, resume, joined_at),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


async def thread_sse(
    services: Services, thread_id: str, modes: list[str], resume: Resume | None, joined_at: float
) -> AsyncIterator[bytes]:
    lifecycle_only = "run_modes" not in modes
    runs = _Runs(services, thread_id, joined_at)
    after, started = 0, False  # a resumed run: after which event, and its start sent
    current: StoredRun | None = None
    if resume is not None:
        current = await asyncio.to_thread(services.runs.store.get, resume.run_id)
        if current is None or not current.belongs_to(thread_id):
            current = None  # not this thread's run: the stream goes on from now
        elif resume.number is None:
            runs.followed(current)
            current = None
        else:
            after, started = resume.number, True
    while True:
        if current is None:
            current = await runs.next_one()
            if current is None:
                yield KEEPALIVE
                continue
        runs.followed(current)
        local = services.runs.local(current.run_id)
        async for item in run_events(services, current.run_id, local, run_modes(current), after):
            if item is None:
                yield KEEPALIVE
                continue
            name, data, number = item
            if name == "metadata" and started:
                continue
            if lifecycle_only and name != "metadata":
                continue
            yield event(name, data, f"{current.run_id}:{number or 0}")
        done = {"status": "run_done", "run_id": current.run_id}
        yield event("metadata", done, f"{current.run_id}:{END}")
        current, after, started = None, 0, False


class _Runs:
    """The thread's runs still to follow: any not followed yet that has not ended; and
    of those that ended, those created since the stream was joined, or once one was
    followed, since that one. A run created for later (`after_seconds`) is followed
    once its time has come, so that the runs before it are not held up."""

    def __init__(self, services: Services, thread_id: str, joined_at: float) -> None:
        self.services = services
        self.thread_id = thread_id
        self.joined_at = joined_at
        self.seen: set[str] = set()
        self.since: float | None = None

    def followed(self, run: StoredRun) -> None:
        self.seen.add(run.run_id)
        self.since = run.created_at if self.since is None else max(self.since, run.created_at)

    async def next_one(self) -> StoredRun | None:
        """The next run to follow, waiting for one up to a keepalive's interval."""
        delay, waited = FIRST_DELAY, 0.0
        while waited < KEEPALIVE_SECONDS:
            found = await asyncio.to_thread(self._next)
            if found is not None:
                return found
            await asyncio.sleep(delay)
            waited += delay
            delay = min(delay * 2, MAX_DELAY)
        return None

    def _next(self) -> StoredRun | None:
        newest = self.services.runs.store.of_thread(self.thread_id, limit=RUNS_LOOKED_AT)
        now = time.time()
        waiting = [run for run in newest if run.run_id not in self.seen and self._due(run, now)]
        return min(waiting, key=lambda run: (run.created_at, run.run_id), default=None)

    def _due(self, run: StoredRun, now: float) -> bool:
        if run.created_at > now:
            return False  # created for later: not yet
        if not run.done:
            return True
        return run.created_at >= (self.joined_at if self.since is None else self.since)
