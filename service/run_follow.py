"""Following a run through the store, from any process: its end, and its chunks.

The process that runs a run streams its chunks from memory (service/run_record.py).
Any other process (or this one, once a run was queued or handed over) follows
it through the store itself: the run's row for its status and output, and its
thread's events for its chunks, folded one by one into the thread as the
running process folded them: the run's first event gives the values it began
with, each node's `NodeCompleted` an `updates` chunk, each closed step the
values, and a pause its interrupts. The store is read every few milliseconds at
first, then less often, up to `MAX_DELAY` s.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from domain.engine.stream_chunks import interrupt_chunks, values_chunks
from domain.record.application import Workflows
from domain.record.supersteps import START
from domain.record.thread import WorkflowThread
from service.run_record import Chunk
from service.run_store import RunStore, StoredRun

FIRST_DELAY, MAX_DELAY = 0.005, 0.2


async def until_done(runs: RunStore, run_id: str) -> StoredRun:
    """The run's row once it has ended."""
    delay = FIRST_DELAY
    while True:
        stored = await asyncio.to_thread(runs.get, run_id)
        if stored is None or stored.done:
            assert stored is not None, "a run's row is kept once it has begun"
            return stored
        await asyncio.sleep(delay)
        delay = min(delay * 2, MAX_DELAY)


async def chunks(
    store: Workflows,
    runs: RunStore,
    stored: StoredRun,
    modes: tuple[str, ...],
    *,
    after_version: int | None = None,
) -> AsyncIterator[Chunk]:
    """The run's chunks, from its first event (or those after `after_version`, when
    its beginning was streamed already), until it has ended."""
    follower = _Follower(stored.run_id, modes, started=after_version is not None)
    thread_id, version, delay = stored.run_thread_id, 0, FIRST_DELAY
    while True:
        row = await asyncio.to_thread(runs.get, stored.run_id)
        thread_id = row.run_thread_id if row is not None else thread_id
        events = await asyncio.to_thread(_events_after, store, thread_id, version)
        for event in events:
            version = event.originator_version
            for chunk in follower.fold(
                event, streamed=after_version is None or version > after_version
            ):
                yield chunk
        if row is None or row.done:
            if not events:
                return
            continue
        if events:
            delay = FIRST_DELAY
            continue
        await asyncio.sleep(delay)
        delay = min(delay * 2, MAX_DELAY)


def _events_after(store: Workflows, thread_id: str, version: int) -> list[Any]:
    return list(store.thread_events(thread_id, gt=version or None))


class _Follower:
    """The thread folded event by event, and the chunks of the run's part of it."""

    def __init__(self, run_id: str, modes: tuple[str, ...], *, started: bool) -> None:
        self.run_id = run_id
        self.modes = modes
        self.started = started
        self.thread: WorkflowThread | None = None

    def fold(self, event: Any, *, streamed: bool) -> list[Chunk]:
        step = None if self.thread is None else self.thread.step
        self.thread = event.mutate(self.thread)
        thread = self.thread
        assert thread is not None
        if not self.started:
            if getattr(event, "run_id", None) != self.run_id:
                return []
            self.started = True
            return values_chunks(thread, self.modes) if streamed else []
        if not streamed:
            return []
        found: list[Chunk] = []
        if isinstance(event, WorkflowThread.NodeCompleted) and event.node != START:
            if "updates" in self.modes:
                found.append(("updates", {event.node: event.update}))
            if thread.step != step:
                found.extend(values_chunks(thread, self.modes))
        elif isinstance(event, WorkflowThread.InterruptRaised) and not thread.runnable():
            found.extend(interrupt_chunks(thread, self.modes))
        return found
