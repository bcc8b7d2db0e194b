"""Runs: graph code in worker threads, never on the event loop.

A run takes its thread's lock (one run at a time per thread in this process;
a second one waits up to `busy_wait` seconds, then gets 409), then *begins*:
the input or the human's answer is checked and committed, so a bad request
fails with a clear error and records nothing. The supersteps then run on in
the background; the run's record tells how it ended. `RunManager.launch`
(the runs endpoints, from the event loop) does all of it in one worker of
the manager's executor, from checking the request to the run's end;
`RunManager.start` (a decision, from a worker thread) begins the run there
and hands the supersteps to another executor, whose workers never wait for a
thread's lock, so a run begun by `start` always gets a worker to end it. Run
records are kept in memory, the newest `keep` of them: the events of a run
are in the store, its record is a convenience of this process.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from domain.engine.resume_answers import resume_map
from domain.engine.runtime import UNREAD, Run
from domain.graph import CompiledStateGraph
from domain.types import Command
from service.errors import RunInProgressError, ServerStoppingError
from service.run_executor import RunExecutor
from service.run_record import ERROR, SUCCESS, RunRecord
from service.wire import output_json


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
    thread_as_read: Any = UNREAD  # the thread (or None) as the checks read it


@dataclass(frozen=True)
class RunOutcome:
    """What one run did, for the metrics."""

    record: RunRecord
    decisions: list[str]  # the kind of each answer the run began with
    interrupts_raised: int


@dataclass(frozen=True)
class _Begun:
    """A run that has begun, holding its thread's lock (`locked_id`) until it finishes."""

    record: RunRecord
    run: Run
    locked_id: str
    decisions: list[str]
    before: set[str]  # the interrupts pending when it began


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
        turn: float = 0.0,
        on_finish: Callable[[RunOutcome], None] | None = None,
    ) -> None:
        # Whole runs, from the request's checks on (`launch`): one after another on a lead
        # thread, beside it on helpers once graph code or a wait for a thread's lock has
        # taken `turn` s (service/run_executor.py); these workers may wait for a thread's lock.
        self.launcher = RunExecutor(workers, turn)
        # The supersteps of runs begun elsewhere (`start`); these never wait for a lock.
        self.executor = ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix="holdpoint-run-rest"
        )
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
        the answer does not fit the thread; RunInProgressError when the thread stays
        busy with another run for longer than `busy_wait`.
        """
        begun = self._begin(request)
        try:
            self.executor.submit(self._finish, begun)
        except RuntimeError:  # the executor is shut down: the server is stopping
            self.locks.release(begun.locked_id)
            error = RuntimeError("the server is stopping")
            begun.record.finish(ERROR, _error_output(error), None)
        return begun.record

    def launch(
        self, prepare: Callable[[], RunRequest], *, until_done: bool = False
    ) -> asyncio.Future[RunRecord]:
        """Prepare, begin and finish a run in one of the manager's workers (call it on the
        event loop). The future is the record once the run has begun (`until_done`: once it
        has finished), or the error that kept it from beginning, nothing recorded; the same
        worker runs it to its end.

        One worker thread from the request to the run's end, and one wake-up of the event
        loop for a caller that waits for the end: each hand-over between threads costs a
        wait for a thread and for the GIL.
        """
        loop = asyncio.get_running_loop()
        outcome: asyncio.Future[RunRecord] = loop.create_future()

        def job() -> None:
            try:
                begun = self._begin(prepare())
            except BaseException as error:
                _notify(loop, outcome, error)
                return
            if not until_done:
                _notify(loop, outcome, begun.record)
            try:
                self._finish(begun)
            finally:
                _notify(loop, outcome, begun.record)  # no-op if settled

        try:
            self.launcher.submit(job)
        except RuntimeError:  # the executor is shut down: the server is stopping
            outcome.set_exception(ServerStoppingError())
        return outcome

    def _begin(self, request: RunRequest) -> _Begun:
        """Take the thread's lock and begin the run: its input or answers committed."""
        thread_id = request.thread_id
        with self.launcher.may_wait():
            locked = self.locks.acquire(thread_id, self.busy_wait)
        if not locked:
            raise RunInProgressError(thread_id, self.active_run(thread_id), self.busy_wait)
        try:
            run = Run(request.graph, request.config, request.stream_modes)
            self.locks.holders[thread_id] = run.run_id
            chunks = run.begin(request.input, request.thread_as_read)
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
        before = set(run.thread.interrupts) if run.thread is not None else set()
        self._remember(record)
        return _Begun(record, run, thread_id, _decisions(request), before)

    def _finish(self, begun: _Begun) -> None:
        record, run, before = begun.record, begun.run, begun.before
        record.started()
        try:
            if any(spec.is_async for spec in run.graph.builder.nodes.values()):
                with self.launcher.may_wait():
                    asyncio.run(_async_steps(record, run))
            else:
                while tasks := run.plan():
                    with self.launcher.may_wait():  # graph code
                        results = [run.execute(task) for task in tasks]
                    record.emit(run.complete(results))
            status, output = SUCCESS, output_json(run.result())
        except Exception as error:  # a node's failure ends the run; it is recorded
            status, output = ERROR, _error_output(error)
        raised = 0
        if run.thread is not None:
            raised = len(set(run.thread.interrupts) - before)
        record.finish(status, output, run.position)
        self.locks.release(begun.locked_id)
        if self.on_finish is not None:
            self.on_finish(RunOutcome(record, begun.decisions, raised))

    def shutdown(self) -> None:
        self.launcher.shutdown()
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
    answers = resume_map(command.resume)
    return [kind] * (1 if answers is None else len(answers))


def _notify(
    loop: asyncio.AbstractEventLoop,
    future: asyncio.Future[RunRecord],
    outcome: RunRecord | BaseException,
) -> None:
    """From a worker: resolve `future` on its event loop."""
    with contextlib.suppress(RuntimeError):  # a closed loop: the server is stopping
        loop.call_soon_threadsafe(_settle, future, outcome)


def _settle(future: asyncio.Future[RunRecord], outcome: RunRecord | BaseException) -> None:
    """On the event loop: resolve `future`, unless its request has gone (cancelled)."""
    if future.done():
        return
    if isinstance(outcome, BaseException):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)


def _error_output(error: BaseException) -> dict[str, Any]:
    return {"__error__": {"error": type(error).__name__, "message": str(error)}}
