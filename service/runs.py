"""Runs: recorded in the store, one runner per thread in the whole deployment.

A run is a row of the store's runs table (service/run_store.py). Before any
node code runs, the run claims its thread with a lease in the store; a second
run of the thread, from any process, follows its `multitask_strategy`:
`reject` answers at once with RunInProgressError, naming the run in progress;
`enqueue` waits in the store's queue and runs after. A decision waits up to
`busy_wait` seconds for the thread instead.

Once it holds the lease a run *begins*: its input or the human's answer is
checked and committed, so a bad request fails with a clear error and records
nothing (the run's row is forgotten with it). The supersteps then run on in
the background. `RunManager.launch` (the runs endpoints, from the event loop)
does all of it in one worker of the manager's executor; `RunManager.start` (a
decision, from a worker thread) begins the run there and hands the supersteps
to another executor, whose workers never wait for a thread.

Every process is a worker too (`RunWorker` in service/run_worker.py): it renews
the leases of its runs, takes runs from the queue, and takes over the runs
whose runner let its lease expire, recording `RunReclaimed` on the thread
before their nodes run again. A run's chunks are kept in this process's memory
for its streams; other processes follow the run through the store
(service/run_follow.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeAlias
from uuid import uuid4

import structlog

from domain.engine.runtime import UNREAD, Run
from domain.errors import ThreadCancelledError
from domain.graph import CompiledStateGraph
from domain.record.resume_maps import resume_map
from domain.record.thread_state import CANCELLED
from domain.record.thread_state import RUNNING as RUNNING_THREAD
from domain.types import Command
from persistence.commit_guard import CommitGuard, CommitRefusedError
from persistence.failures import STORE_UNAVAILABLE
from service.errors import (
    EDIT_HOLDER,
    RunInProgressError,
    RunNotActiveError,
    RunNotFoundError,
    ServerStoppingError,
)
from service.langgraph_app import LangGraphApp
from service.run_executor import RunExecutor
from service.run_record import ERROR, INTERRUPTED, SUCCESS, RunRecord
from service.run_store import RunStore, StoredRun
from service.wire import output_json

if TYPE_CHECKING:
    from service.langgraph_run import LangGraphRun

log = structlog.get_logger()
STRATEGIES = ("reject", "enqueue", "interrupt")


ServedGraph = CompiledStateGraph | LangGraphApp  # a native graph, or a real LangGraph one
AnyRun: TypeAlias = "Run | LangGraphRun"


def new_run(
    graph: ServedGraph, config: dict[str, Any], modes: tuple[str, ...], context: Any
) -> AnyRun:
    """A run of `graph`: the native engine's, or LangGraph's on HoldpointSaver."""
    if isinstance(graph, LangGraphApp):
        from service.langgraph_run import LangGraphRun  # noqa: PLC0415 - brings LangGraph

        return LangGraphRun(graph, config, modes, context)
    return Run(graph, config, modes, context)


@dataclass
class RunRequest:
    """What a caller asked to run."""

    graph: ServedGraph
    thread_id: str
    input: Any  # state values, a Command, or None to continue
    config: dict[str, Any]
    stream_modes: tuple[str, ...]
    assistant_id: str
    metadata: dict[str, Any] = field(default_factory=dict)
    kwargs: dict[str, Any] = field(default_factory=dict)
    streamed: bool = False  # keep every chunk for the run's stream, however late it is read
    thread_as_read: Any = UNREAD  # the thread (or None) as the checks read it
    multitask_strategy: str = "reject"  # when another run holds the thread
    wait: bool = False  # instead: wait up to `busy_wait` s for the thread (a decision)
    context: dict[str, Any] | None = None  # the run's `context` (JSON), its nodes' runtime
    run_id: str | None = None  # given (a cron's firing names its run); else a new one
    delay: float = 0.0  # `after_seconds`: queued, and taken no sooner than this from now


@dataclass(frozen=True)
class RunOutcome:
    """What one run did, for the metrics."""

    record: RunRecord
    decisions: list[str]  # the kind of each answer the run began with
    interrupts_raised: int


@dataclass
class Begun:
    """A run that has begun, holding its thread's lease (`lease_thread`) until it ends."""

    record: RunRecord
    run: AnyRun
    lease_thread: str
    decisions: list[str]
    before: set[str]  # the interrupts pending when it began
    lost: bool = False  # its lease was taken over: it stops before its next step
    cancel: dict[str, Any] | None = None  # who asked it to stop, and why (`RunManager.cancel`)
    end: Ending | None = None  # its end, to be recorded with its last step

    @property
    def stopping(self) -> bool:
        """Whether it runs no further step: taken over, or cancelled."""
        return self.lost or self.cancel is not None


@dataclass(frozen=True)
class Ending:
    """A run's end as the commit of its last step records it: its output, and the guard."""

    output: dict[str, Any]
    guard: CommitGuard


def runner_name() -> str:
    """This process as a runner: host, pid and a random part (a pid is reused)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid4().hex[:8]}"


class RunManager:
    """Starts runs, holds their leases, and runs their supersteps in the background."""

    def __init__(
        self,
        *,
        store: RunStore,
        workers: int,
        busy_wait: float,
        keep: int,
        lease_ttl: float,
        turn: float = 0.0,
        on_finish: Callable[[RunOutcome], None] | None = None,
        admit: Callable[[str], None] | None = None,
    ) -> None:
        # Whole runs, from the request's checks on (`launch`): one after another on a lead
        # thread, beside it on helpers once graph code or a wait for a thread has taken
        # `turn` s (service/run_executor.py).
        self.launcher = RunExecutor(workers, turn)
        # The supersteps of runs begun elsewhere (`start`, the worker); these never wait.
        self.executor = ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix="holdpoint-run-rest"
        )
        self.store = store
        self.owner = runner_name()
        self.lease_ttl = lease_ttl
        self.busy_wait = busy_wait
        self.keep = keep
        self.on_finish = on_finish
        # Raises if a graph may take no run now (a suspended graph: GraphSuspendedError);
        # asked before a run begins, as it is asked for and as a queued one is taken.
        self.admit = admit or (lambda _graph_id: None)
        self._records: OrderedDict[str, RunRecord] = OrderedDict()
        self._held: dict[str, Begun] = {}  # by run id: the runs whose lease this process holds
        self._guard = threading.Lock()
        self._freed = threading.Condition()  # a thread's lease was let go here
        self.on_queued: Callable[[], None] | None = None  # wakes the worker

    # -- records -------------------------------------------------------

    def local(self, run_id: str) -> RunRecord | None:
        """The run's record in this process (its chunks), if it runs or ran here."""
        with self._guard:
            return self._records.get(run_id)

    def records_kept(self) -> int:
        """How many run records this process keeps in memory (at most `keep` once the
        oldest have finished)."""
        with self._guard:
            return len(self._records)

    def held_runs(self) -> list[Begun]:
        with self._guard:
            return list(self._held.values())

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
        the answer does not fit the thread; RunInProgressError when another run holds
        the thread (for longer than `busy_wait`, if the request waits).
        """
        begun = self._begin(request)
        if isinstance(begun, StoredRun):
            return self._queued_record(request, begun)
        self.submit_rest(begun)
        return begun.record

    def submit_rest(self, begun: Begun) -> None:
        """Run a begun run's supersteps on the executor."""
        try:
            self.executor.submit(self.finish, begun)
        except RuntimeError:  # the executor is shut down: the server is stopping
            self._abandon(begun, None)  # stopping: the run is left to a takeover

    def launch(
        self, prepare: Callable[[], RunRequest], *, until_done: bool = False
    ) -> asyncio.Future[RunRecord]:
        """Prepare, begin and finish a run in one of the manager's workers (call it on the
        event loop). The future is the record once the run has begun or is queued
        (`until_done`: once it has finished here), or the error that kept it from
        beginning, nothing recorded; the same worker runs it to its end.

        One worker thread from the request to the run's end, and one wake-up of the event
        loop for a caller that waits for the end: each hand-over between threads costs a
        wait for a thread and for the GIL.
        """
        loop = asyncio.get_running_loop()
        outcome: asyncio.Future[RunRecord] = loop.create_future()

        def job() -> None:
            try:
                request = prepare()
                begun = self._begin(request)
            except BaseException as error:
                _notify(loop, outcome, error)
                return
            if isinstance(begun, StoredRun):
                _notify(loop, outcome, self._queued_record(request, begun))
                return
            if not until_done:
                _notify(loop, outcome, begun.record)
            try:
                self.finish(begun)
            finally:
                _notify(loop, outcome, begun.record)  # no-op if settled

        try:
            self.launcher.submit(job)
        except RuntimeError:  # the executor is shut down: the server is stopping
            outcome.set_exception(ServerStoppingError())
        return outcome

    def _begin(self, request: RunRequest) -> Begun | StoredRun:
        """Claim the thread and begin the run: its input or answers committed. A StoredRun:
        the run waits in the store's queue (`enqueue`).

        A run that records its input or answer first (not a continue, nor a run from a
        past checkpoint, which forks first) claims the thread in that very commit where
        the store can (`RunStore.guard`): the lease, the run and the events in one round
        trip. Refused, it has written nothing."""
        if request.multitask_strategy not in STRATEGIES:
            msg = f"multitask_strategy {request.multitask_strategy!r}"
            raise NotImplementedError(msg)
        self.admit(request.graph.graph_id)
        stored = StoredRun(
            run_id=request.run_id or str(uuid4()),
            thread_id=request.thread_id,
            graph_id=request.graph.graph_id,
            assistant_id=request.assistant_id,
            request=request_json(request),
            multitask_strategy=request.multitask_strategy,
        )
        if request.delay > 0:  # as LangGraph's server: a run created so far in the future
            stored.created_at = stored.updated_at = time.time() + request.delay
        enqueue = (
            request.multitask_strategy == "enqueue" or request.delay > 0
        ) and not request.wait
        interrupt = request.multitask_strategy == "interrupt" and not request.wait
        guarded = not enqueue and request.input is not None and not _from_checkpoint(request)
        deadline = time.monotonic() + (self.busy_wait if request.wait else 0.0)
        cancelled: set[str] = set()  # the runs this one asked to stop, to take their thread
        while True:
            guard = self.store.guard(stored, self.owner, self.lease_ttl) if guarded else None
            if guard is not None:
                try:
                    return self.begin_claimed(request, stored, guard=guard)
                except CommitRefusedError:
                    holder = self.store.holder(stored.run_thread_id)
            else:
                opened = self.store.open(
                    stored,
                    self.owner,
                    self.lease_ttl,
                    enqueue=enqueue,
                    durable=request.input is None,  # a continue records nothing first
                    delayed=request.delay > 0,
                )
                if opened.queued:
                    if self.on_queued is not None:
                        self.on_queued()
                    return stored
                if opened.started:
                    return self.begin_claimed(request, stored)
                holder = opened.holder
            if interrupt and holder is not None and holder not in cancelled:
                self._interrupt(holder, stored.run_id, request)
                cancelled.add(holder)
                deadline = time.monotonic() + self.busy_wait
            with self.launcher.may_wait():
                if not self._wait_for_thread(stored.run_thread_id, deadline):
                    waited = self.busy_wait if request.wait else 0.0
                    raise RunInProgressError(request.thread_id, holder, waited)

    @contextlib.contextmanager
    def holding(self, thread_id: str) -> Iterator[None]:
        """Hold the thread as a run does while a change that is not a run (a human's edit)
        is written: no run moves the thread meanwhile, so the change lands between runs,
        never inside one (where it would be lost to the run's next save, or fail it after
        its node ran). Like a decision it waits up to `busy_wait` s for a run that holds
        the thread; RunInProgressError after that, nothing written."""
        holder = f"{EDIT_HOLDER}{uuid4()}"
        deadline = time.monotonic() + self.busy_wait
        while not self.store.hold(thread_id, holder, self.owner, self.lease_ttl):
            busy = self.store.holder(thread_id)
            if not self._wait_for_thread(thread_id, deadline):
                raise RunInProgressError(thread_id, busy, self.busy_wait)
        try:
            yield
        finally:
            with contextlib.suppress(*STORE_UNAVAILABLE):  # then the lease expires instead
                self.store.let_go(thread_id, holder, self.owner)
            self._notify_freed()

    def _interrupt(self, holder: str, run_id: str, request: RunRequest) -> None:
        """`multitask_strategy: interrupt`: ask the run that holds the thread to stop (it
        records RunCancelled, naming this run), to run once it has."""
        actor = (request.config.get("configurable") or {}).get("actor") or {}
        reason = f"multitask_strategy interrupt: run {run_id} was started on the thread"
        self._ask_to_stop(holder, actor, reason)

    def _ask_to_stop(self, holder: str, actor: dict[str, Any], reason: str | None) -> None:
        """`cancel` the run that holds a thread, unless it ended meanwhile (or the holder
        is an edit, which no run row names)."""
        with contextlib.suppress(RunNotActiveError, RunNotFoundError):
            self.cancel(holder, actor, reason)

    def _wait_for_thread(self, thread_id: str, deadline: float) -> bool:
        """Until no lease holds the thread (True), or the deadline (False); woken by the
        runs of this process, polling the store (a read) for the others'."""
        while (left := deadline - time.monotonic()) > 0:
            with self._freed:
                self._freed.wait(min(left, 0.05))
            if self.store.holder(thread_id) is None:
                return True
        return False

    def begin_claimed(
        self,
        request: RunRequest,
        stored: StoredRun,
        *,
        refusal_ends_run: bool = False,
        guard: CommitGuard | None = None,
    ) -> Begun:
        """Begin a run whose thread's lease this process holds, or claims with `guard` as
        it commits the input (CommitRefusedError: another run holds it). On a refusal the
        thread is let go, and the run forgotten (its caller gets the error) or, with
        `refusal_ends_run` (a queued run, whose caller has gone), ended with the error."""
        config = with_run_id(request.config, stored.run_id)
        try:
            if refusal_ends_run:  # a queued run, taken now: its graph may have been suspended
                self.admit(request.graph.graph_id)
            run = new_run(request.graph, config, request.stream_modes, run_context(request))
            chunks = run.begin(request.input, request.thread_as_read, guard)
            if guard is not None and not guard.applied:  # it committed nothing: claim now
                opened = self.store.open(
                    stored, self.owner, self.lease_ttl, enqueue=False, durable=True
                )
                if not opened.started:
                    raise RunInProgressError(request.thread_id, opened.holder, 0.0)
            if run.thread_id != stored.run_thread_id:  # it forked: it runs on the fork
                self._move(stored, run.thread_id)
        except BaseException as error:
            if guard is not None and not guard.applied:  # nothing of the run was written
                raise
            with contextlib.suppress(*STORE_UNAVAILABLE):  # then the lease expires instead
                if refusal_ends_run:
                    self.store.finish(
                        stored.run_id,
                        stored.run_thread_id,
                        self.owner,
                        ERROR,
                        error_output(error),
                        None,
                    )
                else:
                    self.store.discard(stored.run_id, stored.run_thread_id, self.owner)
            self._notify_freed()
            raise
        return self.adopt(request, stored, run, chunks)

    def _move(self, stored: StoredRun, fork_id: str) -> None:
        """Hold the fork a run made too, and note it on the run's row: a runner that takes
        the run over goes on on the fork (`request_from`), never forks again."""
        if not self.store.move(stored.run_id, self.owner, fork_id, self.lease_ttl):
            raise RunInProgressError(fork_id, self.store.holder(fork_id), 0.0)

    def adopt(
        self,
        request: RunRequest,
        stored: StoredRun,
        run: AnyRun,
        chunks: list[tuple[str, Any]],
    ) -> Begun:
        """Hold a run that has begun in this process: its record, its lease."""
        record = _record_of(request, stored, run.thread_id)
        record.started()  # its input is on record: running, never pending, from here on
        record.position = run.position
        record.emit(chunks)
        before = set(run.thread.interrupts) if run.thread is not None else set()
        begun = Begun(record, run, stored.run_thread_id, _decisions(request), before)
        self._remember(record)
        with self._guard:
            self._held[stored.run_id] = begun
        return begun

    def cancel(self, run_id: str, actor: dict[str, Any], reason: str | None) -> StoredRun:
        """Ask the run to stop (LangGraph's `runs.cancel`, action interrupt): a queued run
        ends at once; a running one stops at its step's end and its runner records
        RunCancelled (this process's runs at once, another's when it next renews its
        leases). Returns the run as it was; RunNotFoundError, or RunNotActiveError for a
        run that has ended."""
        request = {"actor": actor, "reason": reason}
        stored = self.store.request_cancel(run_id, request)
        if stored is None:
            raise RunNotFoundError(run_id)
        if stored.done:
            raise RunNotActiveError(run_id, stored.status)
        with self._guard:
            begun = self._held.get(run_id)
        if begun is not None:
            self.stop(begun, request)
        return stored

    def stop_holder(self, thread_id: str, actor: dict[str, Any], reason: str | None) -> None:
        """Ask the run that holds the thread, if one does, to stop at its step's end: the
        thread was cancelled (its record stops the run there too; this stops a real
        LangGraph run that saves in the background before it starts another step)."""
        holder = self.store.holder(thread_id)
        if holder is not None:
            self._ask_to_stop(holder, actor, reason)

    def stop(self, begun: Begun, request: dict[str, Any]) -> None:
        """Stop a run of this process before its next step: it was cancelled."""
        begun.cancel = request

    def finish(self, begun: Begun) -> None:
        """Run a begun run's supersteps to its end, and record how it ended."""
        record, run, before = begun.record, begun.run, begun.before
        at_end = self._end(begun) if self.store.guards and isinstance(run, Run) else None
        recorded_end = False  # with the last step's events
        try:
            if not isinstance(run, Run):  # LangGraph's
                with self.launcher.may_wait():  # graph code, all of it
                    run.run(record.emit, lambda: begun.stopping)
            elif any(spec.is_async for spec in run.graph.builder.nodes.values()):
                with self.launcher.may_wait():
                    asyncio.run(_async_steps(begun, at_end))
            else:
                while not begun.stopping and (tasks := run.plan()):
                    with self.launcher.may_wait():  # graph code
                        results = [run.execute(task) for task in tasks]
                    record.emit(run.complete(results, at_end))
            status = SUCCESS
            if begun.end is not None and begun.end.guard.applied:
                recorded_end, output = True, begun.end.output
            else:
                output = output_json(run.result())
        except CommitRefusedError:  # taken over before its last step, which was not written
            self._abandon(begun, None)
            return
        except STORE_UNAVAILABLE as error:
            self._abandon(begun, error)
            return
        except ThreadCancelledError:  # the stop button, pressed while it ran: it ran no more
            status, output = INTERRUPTED, output_json(run.result())
        except Exception as error:  # a node's failure ends the run; it is recorded
            status, output = ERROR, error_output(error)
        if status == SUCCESS and not recorded_end and _on_a_cancelled_thread(run):
            status = INTERRUPTED  # stopped at a step's end (a run whose last step recorded
            # its end with it ran to its end, the stop pressed as that step ran)
        if begun.cancel is not None and status == SUCCESS and _midway(run):
            self._cancelled(begun, begun.cancel)
            return
        if begun.lost:
            self._abandon(begun, None)
            return
        raised = 0
        if run.thread is not None:
            raised = len(set(run.thread.interrupts) - before)
        try:  # the end recorded with the last step, or now
            kept = recorded_end or self.store.finish(
                record.run_id,
                begun.lease_thread,
                self.owner,
                status,
                output,
                run.position,
                run.thread_id,
            )
        except STORE_UNAVAILABLE as error:
            self._abandon(begun, error)
            return
        if not kept:
            log.warning("run taken over before it finished here", run_id=record.run_id)
        self._forget(begun)
        record.finish(status, output, run.position)
        if self.on_finish is not None:
            self.on_finish(RunOutcome(record, begun.decisions, raised))

    def _end(self, begun: Begun) -> Callable[[], CommitGuard]:
        """For `Run.complete`: the run's end (a success), to record in the commit of its last
        step where the store can (`RunStore.end_guard`)."""

        def end() -> CommitGuard:
            run = begun.run
            assert isinstance(run, Run), "a native run's end is recorded with its last step"
            output = output_json(run.result())
            guard = self.store.end_guard(
                begun.record.run_id, begun.lease_thread, self.owner, output, run.thread_id
            )
            begun.end = Ending(output, guard)
            return guard

        return end

    def _cancelled(self, begun: Begun, request: dict[str, Any]) -> None:
        """The run stopped at a step's end because it was cancelled: RunCancelled on its
        thread, then its end (`interrupted`, with the values it left)."""
        record, run = begun.record, begun.run
        try:
            position, store = run.position, run.store
            if store is not None and run.thread_id and store.thread(run.thread_id) is not None:
                position = store.record_run_cancelled(
                    run.thread_id, record.run_id, request["actor"], request.get("reason")
                )
            output = output_json(run.result())
            self.store.finish(
                record.run_id,
                begun.lease_thread,
                self.owner,
                INTERRUPTED,
                output,
                position,
                run.thread_id,
            )
        except STORE_UNAVAILABLE as error:
            self._abandon(begun, error)
            return
        self._forget(begun)
        record.finish(INTERRUPTED, output, position)

    def _abandon(self, begun: Begun, error: BaseException | None) -> None:
        """Stop a run here without recording its end: its lease is no longer renewed, and
        expires; then a runner (this one, or another) takes it over and ends it."""
        self._forget(begun)
        if error is not None:
            log.warning(
                "run left for a takeover: the store did not answer",
                run_id=begun.record.run_id,
                error=f"{type(error).__name__}: {error}",
            )
        begun.record.hand_over(error)

    def _forget(self, begun: Begun) -> None:
        with self._guard:
            self._held.pop(begun.record.run_id, None)
        self._notify_freed()

    def _notify_freed(self) -> None:
        with self._freed:
            self._freed.notify_all()

    def _queued_record(self, request: RunRequest, stored: StoredRun) -> RunRecord:
        """The record of a run that waits in the queue: the worker that takes it (here or
        elsewhere) runs it."""
        record = _record_of(request, stored, request.thread_id)
        record.created_at = record.updated_at = datetime.fromtimestamp(stored.created_at, UTC)
        record.hand_over()
        return record

    def shutdown(self) -> None:
        self.launcher.shutdown()
        self.executor.shutdown(wait=True, cancel_futures=False)


async def _async_steps(begun: Begun, at_end: Callable[[], CommitGuard] | None) -> None:
    run = begun.run
    assert isinstance(run, Run), "a LangGraph run runs on LangGraph"
    while not begun.stopping and (tasks := run.plan()):
        outcomes = await asyncio.gather(*(run.aexecute(task) for task in tasks))
        begun.record.emit(run.complete(list(outcomes), at_end))


def _record_of(request: RunRequest, stored: StoredRun, thread_id: str) -> RunRecord:
    """This process's record of a stored run, running on `thread_id`."""
    return RunRecord(
        run_id=stored.run_id,
        thread_id=thread_id,
        graph_id=request.graph.graph_id,
        assistant_id=request.assistant_id,
        metadata=request.metadata,
        kwargs=request.kwargs,
        origin_thread_id=stored.thread_id,
        keep_chunks=request.streamed,
        multitask_strategy=stored.multitask_strategy,
        attempt=stored.attempt,
    )


def _on_a_cancelled_thread(run: AnyRun) -> bool:
    """Whether the run's thread was cancelled (the stop button) while it ran."""
    return run.thread is not None and run.thread.status == CANCELLED


def _midway(run: AnyRun) -> bool:
    """Whether the run stopped with nodes still to run (cancelled), rather than at its end
    or at a question (then a cancel came too late: the run ends as it ended)."""
    thread = run.thread
    return thread is not None and thread.status == RUNNING_THREAD


def run_context(request: RunRequest) -> Any:
    """The run's context as its nodes' `runtime.context`: the JSON object made the graph's
    `context_schema` (a dataclass or pydantic model: its fields as keywords), as LangGraph's
    server does; kept as the object it is for a TypedDict or no schema."""
    schema = getattr(getattr(request.graph, "builder", None), "context_schema", None)
    if request.context is None or schema is None or not _takes_fields(schema):
        return request.context
    return schema(**request.context)


def _takes_fields(schema: type) -> bool:
    return dataclasses.is_dataclass(schema) or hasattr(schema, "model_validate")


def _from_checkpoint(request: RunRequest) -> bool:
    """Whether the run names a checkpoint to start from (a fork, recorded first)."""
    return bool((request.config.get("configurable") or {}).get("checkpoint_id"))


def with_run_id(config: dict[str, Any], run_id: str) -> dict[str, Any]:
    """`config` with the run's id in its `configurable`, for the events it records."""
    configurable = dict(config.get("configurable") or {})
    configurable["run_id"] = run_id
    return {**config, "configurable": configurable}


def request_json(request: RunRequest) -> dict[str, Any]:
    """What a run was asked to do, as JSON, for the runner that takes it from the queue
    or over from a dead runner (`request_from`)."""
    graph_input = request.input
    if isinstance(graph_input, Command):
        graph_input = {
            "__command__": {
                "resume": graph_input.resume,
                "update": graph_input.update,
                "goto": graph_input.goto_nodes(),
            }
        }
    return {
        "input": graph_input,
        "config": {k: v for k, v in request.config.items() if k != "callbacks"},
        "stream_modes": list(request.stream_modes),
        "metadata": request.metadata,
        "kwargs": request.kwargs,
        "streamed": request.streamed,
        "context": request.context,
    }


def request_from(stored: StoredRun, graph: ServedGraph) -> RunRequest:
    """The RunRequest a stored run was made from; on its fork, once it has forked."""
    asked = stored.request
    config = asked["config"]
    if stored.run_thread_id != stored.thread_id:  # it has forked: it goes on on its fork
        configurable = {
            key: value
            for key, value in (config.get("configurable") or {}).items()
            if key not in ("checkpoint_id", "fork_thread_id")
        }
        config = {**config, "configurable": {**configurable, "thread_id": stored.run_thread_id}}
    graph_input = asked["input"]
    if isinstance(graph_input, dict) and set(graph_input) == {"__command__"}:
        command = graph_input["__command__"]
        graph_input = Command(
            resume=command["resume"], update=command["update"], goto=command["goto"]
        )
    return RunRequest(
        graph=graph,
        thread_id=stored.thread_id,
        input=graph_input,
        config=config,
        stream_modes=tuple(asked["stream_modes"]),
        assistant_id=stored.assistant_id,
        metadata=asked["metadata"],
        kwargs=asked["kwargs"],
        streamed=asked["streamed"],
        multitask_strategy=stored.multitask_strategy,
        context=asked.get("context"),
    )


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


def error_output(error: BaseException) -> dict[str, Any]:
    return {"__error__": {"error": type(error).__name__, "message": str(error)}}
