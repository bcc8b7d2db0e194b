"""Runs: graph code in worker threads, never on the event loop.

`RunManager.start` is called from a request's worker thread. It takes the
thread's lock (one run at a time per thread in this process; a second one
waits up to `busy_wait` seconds, then gets 409), then *begins* the run:
the input or the human's answer is checked and committed, so a bad request
fails with a clear error and records nothing. The supersteps then run in
the background on the manager's executor; the run's record tells how it
ended. Run records are kept in memory, the newest `keep` of them: the events
of a run are in the store, its record is a convenience of this process.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from api.problems import Problem
from api.run_record import ERROR, SUCCESS, RunRecord
from api.wire import output_json
from domain.graph import CompiledStateGraph
from domain.runtime import Run, is_interrupt_id
from domain.types import Command


@dataclass
class RunRequest:
    """What a caller asked to run."""

    graph: CompiledStateGraph
    thread_id: str
    input: Any  # state values, a Command, or None to continue
    config: dict[str, Any]
    stream_modes: tuple[str, ...]
    assistant_id: str
    metadata: dict[str, Any] = field(default_factory=dict)
    kwargs: dict[str, Any] = field(default_factory=dict)
    streamed: bool = False  # keep every chunk for the run's stream, however late it is read


@dataclass(frozen=True)
class RunOutcome:
    """What one run did, for the metrics."""

    record: RunRecord
    decisions: list[str]  # the kind of each answer the run began with
    interrupts_raised: int


class ThreadLocks:
    """One lock per thread id, dropped when nobody holds or waits for it."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, tuple[threading.Lock, int]] = {}
        self.holders: dict[str, str] = {}

    def acquire(self, thread_id: str, timeout: float) -> bool:
        with self._guard:
            lock, users = self._locks.get(thread_id) or (threading.Lock(), 0)
            self._locks[thread_id] = (lock, users + 1)
        if lock.acquire(timeout=timeout):
            return True
        self._forget(thread_id)
        return False

    def release(self, thread_id: str) -> None:
        with self._guard:
            lock, _ = self._locks[thread_id]
            self.holders.pop(thread_id, None)
        lock.release()
        self._forget(thread_id)

    def _forget(self, thread_id: str) -> None:
        with self._guard:
            lock, users = self._locks[thread_id]
            if users <= 1:
                del self._locks[thread_id]
            else:
                self._locks[thread_id] = (lock, users - 1)


class RunManager:
    """Starts runs, keeps their records, and runs their supersteps in the background."""

    def __init__(
        self,
        *,
        workers: int,
        busy_wait: float,
        keep: int,
        on_finish: Callable[[RunOutcome], None] | None = None,
    ) -> None:
        self.executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="holdpoint-run")
        self.busy_wait = busy_wait
        self.keep = keep
        self.on_finish = on_finish
        self.locks = ThreadLocks()
        self._records: OrderedDict[str, RunRecord] = OrderedDict()
        self._guard = threading.Lock()

    # -- records -------------------------------------------------------

    def get(self, run_id: str) -> RunRecord | None:
        with self._guard:
            return self._records.get(run_id)

    def of_thread(self, thread_id: str) -> list[RunRecord]:
        """The thread's runs known to this process, newest first."""
        with self._guard:
            found = [r for r in self._records.values() if r.thread_id == thread_id]
        return found[::-1]

    def active_run(self, thread_id: str) -> str | None:
        return self.locks.holders.get(thread_id)

    def _remember(self, record: RunRecord) -> None:
        with self._guard:
            self._records[record.run_id] = record
            while len(self._records) > self.keep:
                oldest = next(iter(self._records.values()))
                if not oldest.done:
                    break
                self._records.popitem(last=False)

    # -- running -------------------------------------------------------

    def start(self, request: RunRequest) -> RunRecord:
        """Begin a run (blocking: call it from a worker thread); the rest runs in the background.

        Raises the domain's errors, having recorded nothing, when the input or
        the answer does not fit the thread; Problem(409) when the thread stays
        busy with another run for longer than `busy_wait`.
        """
        thread_id = request.thread_id
        if not self.locks.acquire(thread_id, self.busy_wait):
            active = self.active_run(thread_id)
            msg = (
                f"Thread {thread_id!r} is busy with run {active or '(finishing)'} and stayed "
                f"busy for {self.busy_wait:g} s; join that run, then try again"
            )
            raise Problem(409, msg, code="thread-busy")
        try:
            run = Run(request.graph, request.config, request.stream_modes)
            self.locks.holders[thread_id] = run.run_id
            chunks = run.begin(request.input)
        except BaseException:
            self.locks.release(thread_id)
            raise
        record = RunRecord(
            run_id=run.run_id,
            thread_id=run.thread_id,
            graph_id=request.graph.graph_id,
            assistant_id=request.assistant_id,
            metadata=request.metadata,
            kwargs=request.kwargs,
            origin_thread_id=thread_id,
            keep_chunks=request.streamed,
        )
        record.position = run.position
        record.emit(chunks)
        decisions = _decisions(request)
        before = set(run.thread.interrupts) if run.thread is not None else set()
        self._remember(record)
        try:
            self.executor.submit(self._finish, record, run, thread_id, decisions, before)
        except RuntimeError:  # the executor is shut down: the server is stopping
            self.locks.release(thread_id)
            record.finish(ERROR, _error_output(RuntimeError("the server is stopping")), None)
        return record

    def _finish(
        self,
        record: RunRecord,
        run: Run,
        locked_id: str,
        decisions: list[str],
        before: set[str],
    ) -> None:
        record.started()
        try:
            if any(spec.is_async for spec in run.graph.builder.nodes.values()):
                asyncio.run(_async_steps(record, run))
            else:
                while tasks := run.plan():
                    record.emit(run.complete([run.execute(task) for task in tasks]))
            status, output = SUCCESS, output_json(run.result())
        except Exception as error:  # a node's failure ends the run; it is recorded
            status, output = ERROR, _error_output(error)
        raised = 0
        if run.thread is not None:
            raised = len(set(run.thread.interrupts) - before)
        record.finish(status, output, run.position)
        self.locks.release(locked_id)
        if self.on_finish is not None:
            self.on_finish(RunOutcome(record, decisions, raised))

    def shutdown(self) -> None:
        self.executor.shutdown(wait=True, cancel_futures=False)


async def _async_steps(record: RunRecord, run: Run) -> None:
    while tasks := run.plan():
        outcomes = await asyncio.gather(*(run.aexecute(task) for task in tasks))
        record.emit(run.complete(list(outcomes)))


def _decisions(request: RunRequest) -> list[str]:
    """The kind of each answer a run begins with (for the metrics)."""
    command = request.input
    if not isinstance(command, Command) or command.resume is None:
        return []
    kind = str((request.config.get("configurable") or {}).get("decision") or "respond")
    resume = command.resume
    count = len(resume) if isinstance(resume, dict) and all(map(is_interrupt_id, resume)) else 1
    return [kind] * max(count, 1)


def _error_output(error: BaseException) -> dict[str, Any]:
    return {"__error__": {"error": type(error).__name__, "message": str(error)}}
