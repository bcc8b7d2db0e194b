"""One run as the process that runs it sees it: its status, its chunks, its output.

The run itself is a row in the store (service/run_store.py), and what it did is
in the store as events; its record here is the live part, in the memory of the
process that runs it: the chunks for its streams. Chunks are produced in a
worker thread and consumed on the event loop: each subscriber has an
`asyncio.Queue` fed with `call_soon_threadsafe`, first with the chunks so far. A
record *handed over* ends its local streams without an end of its own: the run
waits in the queue, or was left to a takeover, and is followed through the store
from then on (service/run_follow.py).

Each chunk has its number in the run's stream, from 1: the `id` of its server-sent
event, from which a dropped stream resumes (`Last-Event-ID`). A run's record keeps its
chunks while it runs; once it has ended, only if it was streamed (`keep_chunks`): a
later subscriber to a run that was not gets its output, numbered as its last chunk.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from datetime import UTC, datetime
from typing import Any

from service.wire import iso

PENDING, RUNNING, SUCCESS, ERROR = "pending", "running", "success", "error"
INTERRUPTED = "interrupted"  # cancelled
Chunk = tuple[str, Any]
Numbered = tuple[int, Chunk]  # a chunk and its number in the run's stream
DONE: Numbered = (0, ("__done__", None))


class RunRecord:
    """A run: LangGraph's Run fields, plus its chunks and final output."""

    def __init__(
        self,
        *,
        run_id: str,
        thread_id: str,
        graph_id: str,
        assistant_id: str,
        metadata: dict[str, Any],
        kwargs: dict[str, Any],
        origin_thread_id: str | None = None,
        keep_chunks: bool = False,
        multitask_strategy: str = "reject",
        attempt: int = 1,
    ) -> None:
        self.run_id = run_id
        self.thread_id = thread_id
        # The thread the run was asked for; a run from a past checkpoint runs on a fork.
        self.origin_thread_id = origin_thread_id or thread_id
        self.keep_chunks = keep_chunks
        self.graph_id = graph_id
        self.assistant_id = assistant_id
        self.metadata = metadata
        self.kwargs = kwargs
        self.multitask_strategy = multitask_strategy
        self.attempt = attempt
        self.handed_over = False
        self.failure: BaseException | None = None
        self.created_at = self.updated_at = datetime.now(UTC)
        self.status = PENDING
        self.output: dict[str, Any] | None = None
        self.position: int | None = None
        self._chunks: list[Numbered] = []
        self._produced = 0  # chunks so far
        self._subscribers: list[
            tuple[asyncio.AbstractEventLoop, asyncio.Queue[Numbered], bool]
        ] = []
        self._lock = threading.Lock()
        self._finished = threading.Event()

    def belongs_to(self, thread_id: str) -> bool:
        return thread_id in (self.thread_id, self.origin_thread_id)

    @property
    def done(self) -> bool:
        return self._finished.is_set()

    def json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "thread_id": self.thread_id,
            "assistant_id": self.assistant_id,
            "created_at": iso(self.created_at),
            "updated_at": iso(self.updated_at),
            "status": self.status,
            "metadata": self.metadata,
            "multitask_strategy": self.multitask_strategy,
            "kwargs": self.kwargs,
            "langsmith_session_name": None,
        }

    # -- producing (worker thread) ------------------------------------

    def started(self) -> None:
        self.status, self.updated_at = RUNNING, datetime.now(UTC)

    def emit(self, chunks: list[Chunk]) -> None:
        if not chunks:
            return
        with self._lock:
            first = self._produced + 1
            numbered = list(enumerate(chunks, first))
            self._produced += len(chunks)
            self._chunks.extend(numbered)
            for loop, queue, wants_chunks in self._subscribers:
                if wants_chunks:
                    for item in numbered:
                        _put(loop, queue, item)

    def finish(self, status: str, output: dict[str, Any], position: int | None) -> None:
        with self._lock:
            self.status, self.output, self.updated_at = status, output, datetime.now(UTC)
            if position is not None:
                self.position = position
            self._finished.set()
            for loop, queue, _ in self._subscribers:
                _put(loop, queue, DONE)
            self._subscribers.clear()
            if not self.keep_chunks:
                self._chunks.clear()  # a late subscriber gets the output, not every step

    def hand_over(self, failure: BaseException | None = None) -> None:
        """End the local streams; the run goes on elsewhere (or later), in the store.
        `failure`: the store's error that made this process leave the run to a takeover."""
        with self._lock:
            self.handed_over = True
            self.failure = failure
            self._finished.set()
            for loop, queue, _ in self._subscribers:
                _put(loop, queue, DONE)
            self._subscribers.clear()

    # -- consuming (event loop) ---------------------------------------

    def subscribe(self, *, chunks: bool = True) -> asyncio.Queue[Numbered]:
        """A queue of the run's numbered chunks (those so far first), ending with DONE."""
        queue: asyncio.Queue[Numbered] = asyncio.Queue()
        with self._lock:
            if self._finished.is_set():
                settled = chunks and not self.handed_over
                if settled and self.keep_chunks:
                    for item in self._chunks:
                        queue.put_nowait(item)
                elif settled and self.output is not None and "__error__" not in self.output:
                    queue.put_nowait((max(self._produced, 1), ("values", self.output)))
                queue.put_nowait(DONE)
                return queue
            if chunks:
                for item in self._chunks:
                    queue.put_nowait(item)
            self._subscribers.append((asyncio.get_running_loop(), queue, chunks))
        return queue

    async def wait(self) -> None:
        """Until the run has finished, without holding a thread."""
        queue = self.subscribe(chunks=False)
        while await queue.get() != DONE:
            pass

    def wait_blocking(self, timeout: float | None = None) -> bool:
        return self._finished.wait(timeout)


def _put(loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[Numbered], item: Numbered) -> None:
    with contextlib.suppress(RuntimeError):  # a closed loop: the server is stopping
        loop.call_soon_threadsafe(queue.put_nowait, item)
