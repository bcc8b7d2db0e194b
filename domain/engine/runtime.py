"""The runtime: one `invoke` or `stream` of a compiled graph on one thread.

A run first checks what it was given against the thread's state, strictly,
and records the input or the human's answers (committed before any node
runs, so that of two racing resumes only one runs node code). Then it runs
supersteps: every runnable node of the open step sees the state as it was at
the start of the step; their outcomes are recorded together, in one commit,
before the next step starts.

`Run` here drives a run and records it; its pieces are its siblings: answering a
paused thread (resume_answers.py), calling the nodes (node_tasks.py), the chunks it
streams (stream_chunks.py), and what it reads of the graph (run_graph.py).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, Any
from uuid import uuid4

from domain.access.actor import resolve_actor
from domain.engine import node_tasks
from domain.engine.node_tasks import Outcome, Task, check_one_writer_per_key
from domain.engine.resume_answers import answer_interrupts
from domain.engine.stream_chunks import interrupt_chunks, pending_interrupts, values_chunks
from domain.engine.task_context import TaskContext, current_task
from domain.errors import (
    ConcurrentUpdateError,
    EmptyInputError,
    GraphRecursionError,
    HoldpointError,
    InvalidUpdateError,
    MissingThreadIdError,
    NoCheckpointerError,
    OversightError,
    ThreadCancelledError,
    ThreadNotFoundError,
)
from domain.history import state_snapshots as snapshots
from domain.history.forks import branch
from domain.oversight import hold_points
from domain.record.application import RECORD_ATTEMPTS
from domain.record.langgraph_record import NATIVE
from domain.record.schema import as_state, as_update
from domain.record.supersteps import START
from domain.record.thread_state import CANCELLED, IDLE
from domain.runtime import Runtime
from domain.types import Command

if TYPE_CHECKING:
    from domain.engine.run_graph import RunGraph
    from domain.record.application import Workflows
    from domain.record.thread import WorkflowThread

DEFAULT_RECURSION_LIMIT = 10007
REQUEST_KEY = "holdpoint_request"  # configurable: the HTTP request a run serves
UNREAD = object()  # Run.begin's `as_read` when the caller has not read the thread


def engine_keys(configurable: dict[str, Any]) -> list[str]:
    """The keys of a run's `configurable` that the graph engine keeps for itself: every
    key that begins with `__` (LangGraph's `__pregel_resume_map` among them) and
    `checkpoint_map`. Set by a caller they would steer the engine past the hold points:
    a resume map hands a node its answer before any rule sees it."""
    return sorted(key for key in configurable if key.startswith("__") or key == "checkpoint_map")


def _with_parent_config(config: dict[str, Any]) -> dict[str, Any]:
    """A graph without a checkpointer invoked inside a running node takes that node's
    `configurable` (its thread_id, actor...) under its own, as LangGraph's does, so that
    its nodes see the parent's thread. (A graph with a checkpointer names its own
    thread: on the parent's it would write into the parent's record.)"""
    try:
        parent = current_task().config
    except RuntimeError:  # not inside a node
        return config
    inherited = {
        key: value
        for key, value in (parent.get("configurable") or {}).items()
        if key not in ("run_id", "checkpoint_id", REQUEST_KEY)
    }
    return {**config, "configurable": {**inherited, **(config.get("configurable") or {})}}


class Run:
    """One invoke/stream of a graph on a thread, from input to pause or end."""

    def __init__(
        self,
        graph: RunGraph,
        config: dict[str, Any] | None,
        modes: tuple[str, ...],
        context: Any = None,
    ) -> None:
        self.store: Workflows | None = graph.checkpointer
        config = config or {}
        if self.store is None:
            config = _with_parent_config(config)
        configurable = config.get("configurable") or {}
        self.graph = graph
        self.config = config
        self.modes = modes
        self.thread_id = str(configurable.get("thread_id") or "")
        if self.store is not None and not self.thread_id:
            raise MissingThreadIdError
        if self.store is None:
            self.thread_id = self.thread_id or f"ephemeral-{uuid4().hex}"
        self.actor = resolve_actor(configurable.get("actor"))
        self.recursion_limit = int(config.get("recursion_limit") or DEFAULT_RECURSION_LIMIT)
        self.run_id = str(configurable.get("run_id") or uuid4())
        # The HTTP request this run serves, {"action", "target"}: it names a refusal.
        self.request: dict[str, Any] | None = configurable.get(REQUEST_KEY)
        self.thread: WorkflowThread | None = None
        self.runtime = Runtime(context=context)  # what nodes taking `runtime` get
        self.steps_run = 0
        self.ended = False  # ThreadCompleted recorded by this run
        self.position: int | None = None

    # -- the two drivers -----------------------------------------------

    def stream(self, graph_input: Any) -> Iterator[tuple[str, Any]]:
        yield from self.begin(graph_input)
        while tasks := self.plan():
            outcomes = [self.execute(task) for task in tasks]
            yield from self.complete(outcomes)

    async def astream(self, graph_input: Any) -> AsyncIterator[tuple[str, Any]]:
        for chunk in self.begin(graph_input):
            yield chunk
        while tasks := self.plan():
            outcomes = await asyncio.gather(*(self.aexecute(task) for task in tasks))
            for chunk in self.complete(list(outcomes)):
                yield chunk

    # -- beginning a run -----------------------------------------------

    def begin(
        self, graph_input: Any, as_read: Any = UNREAD, guard: object | None = None
    ) -> list[tuple[str, Any]]:
        """Check the input against the thread, record it, and commit.

        `as_read`: the thread (or None) as the caller has just read it, to be used
        if nothing was recorded on it since, rather than read again. A hold point's
        rule that refuses the input raises OversightError, its refusal recorded.
        `guard`: a condition the store checks in the commit of the input (the store's
        own object, passed through: see `Workflows.record`).
        """
        try:
            return self._begin(graph_input, as_read, guard)
        except OversightError as error:
            if self.store is not None:
                self.store.record_refusal(error, self.actor, "invoke", self.thread_id, self.request)
            raise

    def _begin(self, graph_input: Any, as_read: Any, guard: object | None) -> list[tuple[str, Any]]:
        if self.store is not None:
            if as_read is not UNREAD and self.store.unchanged_since(
                self.thread_id, 0 if as_read is None else as_read.version
            ):
                self.thread = as_read
            else:
                self.thread = self.store.thread(self.thread_id)
            if self.thread is not None:
                self.thread.check_engine(NATIVE)
            wanted = (self.config.get("configurable") or {}).get("checkpoint_id")
            current = self.thread
            if wanted and current and not snapshots.is_current_checkpoint(current, str(wanted)):
                self.thread = self._fork(self.store, str(wanted))
        if isinstance(graph_input, Command):
            if graph_input.resume is not None:
                self._begin_resume(graph_input)
            else:
                self._begin_command(graph_input)
        elif graph_input is None:
            self._begin_continue()
        else:
            self._begin_input(graph_input)
        if self.thread is not None:
            self.thread.use_assistant(self.config.get("metadata") or {}, self.actor)
        self._commit(guard)
        return self._values_chunk()

    def _fork(self, store: Workflows, wanted: str) -> WorkflowThread:
        """Time travel: continue from a past checkpoint on a new thread
        (domain/history/forks.py)."""
        source = snapshots.load_checkpoint(store, self.thread_id, wanted)
        configurable = self.config.get("configurable") or {}
        fork = branch(store, source, self.actor, configurable.get("fork_thread_id"), self.run_id)
        self.thread_id = fork.thread_id
        return fork

    def _begin_input(self, graph_input: Any) -> None:
        values = as_update(graph_input)
        if values is None:
            msg = f"Graph input must be a dict of state values, not {type(graph_input).__name__}"
            raise InvalidUpdateError(msg)
        update = self.graph.filter_update(values, "The input")
        if self.thread is None:
            self.thread = self.graph.start_thread(self.thread_id, self.config, self.actor)
        else:
            self.thread.check_at_rest()  # before the routes run any of the graph's code
        routes = self.graph.routes(START, self.thread.values, update)
        self.thread.receive_input(self.run_id, update, routes, self.actor)

    def _begin_command(self, command: Command[Any]) -> None:
        if command.update is None and not command.goto_nodes():
            msg = (
                "Command() carries nothing to do: give resume=..., update=... or goto=...; "
                "to answer an interrupt with None, use Command(resume={interrupt_id: None})"
            )
            raise InvalidUpdateError(msg)
        thread = self._existing_thread("a Command needs a thread to act on")
        hold_points.check_may_change(
            thread, self.actor, self.graph.oversight, "A Command(update=..., goto=...)"
        )
        thread.check_at_rest()
        update = {}
        if command.update is not None:
            values = as_update(command.update)
            if values is None:
                msg = f"Command(update=...) must be a dict, not {type(command.update).__name__}"
                raise InvalidUpdateError(msg)
            update = self.graph.filter_update(values, "The Command update")
        routes = self.graph.check_targets(command.goto_nodes(), "Command(goto=...)")
        if routes:
            natural = self.graph.routes(START, thread.values, update)
            hold_points.check_goto(self.actor, routes, natural)
        thread.receive_input(self.run_id, update, routes, self.actor)

    def _begin_resume(self, command: Command[Any]) -> None:
        if self.store is None:
            msg = "Cannot use Command(resume=...) without a checkpointer"
            raise NoCheckpointerError(msg)
        thread = self._existing_thread("a resume never starts a thread; check the thread_id")
        answer_interrupts(
            self.graph,
            thread,
            command,
            thread_id=self.thread_id,
            config=self.config,
            actor=self.actor,
            run_id=self.run_id,
        )

    def _begin_continue(self) -> None:
        thread = self._existing_thread("")
        if thread.status == CANCELLED:
            raise ThreadCancelledError(self.thread_id)

    def _existing_thread(self, hint: str) -> WorkflowThread:
        if self.thread is None:
            if not hint:
                msg = (
                    f"Thread {self.thread_id!r} does not exist: there is nothing to "
                    "continue; send input to start it"
                )
                raise EmptyInputError(msg)
            raise ThreadNotFoundError(self.thread_id, hint)
        return self.thread

    # -- supersteps ----------------------------------------------------

    def plan(self) -> list[Task]:
        """The tasks of the next superstep; none when paused, failed or done."""
        thread = self._thread()
        runnable = thread.runnable()
        if not runnable:
            return []
        if thread.cancelled is not None:  # the stop button, pressed while the last step ran
            raise ThreadCancelledError(thread.thread_id)
        if self.steps_run >= self.recursion_limit:
            self._stop_on_recursion_limit(thread)
        self.steps_run += 1
        durable = self.store is not None
        base = thread.values
        tasks = []
        for node in runnable:
            answers = list(thread.answers.get(node, ()))
            task_id = thread.task_id(node)
            config = {
                **self.config,
                "metadata": {
                    **(self.config.get("metadata") or {}),
                    "langgraph_node": node,
                    "langgraph_step": thread.step + 1,
                    "holdpoint_task_id": task_id,
                },
            }
            context = TaskContext(
                node, durable, answers, task_id=task_id, config=config, runtime=self.runtime
            )
            tasks.append(Task(node, context, as_state(self.graph.state_schema, dict(base))))
        return tasks

    def _stop_on_recursion_limit(self, thread: WorkflowThread) -> None:
        msg = (
            f"Recursion limit of {self.recursion_limit} reached without hitting a stop "
            "condition. You can increase the limit by setting the `recursion_limit` config key."
        )
        thread.fail("GraphRecursionError", msg)
        self._commit()
        raise GraphRecursionError(msg)

    def execute(self, task: Task) -> Outcome:
        return node_tasks.execute(self.graph, self.config, task, self._outcome)

    async def aexecute(self, task: Task) -> Outcome:
        return await node_tasks.aexecute(self.graph, self.config, task, self._outcome)

    def _outcome(self, task: Task, returned: Any, started: float) -> Outcome:
        duration_ms = round((time.perf_counter() - started) * 1000, 3)
        node = task.node
        try:
            update, goto = self.graph.node_update(node, returned)
            routes = self.graph.routes(node, self._thread().values, update, goto)
        except HoldpointError as error:
            return Outcome(node, error=error)
        return Outcome(node, update, routes, duration_ms, applied=task.context.applied or None)

    def complete(
        self, outcomes: list[Outcome], at_end: Callable[[], object | None] | None = None
    ) -> list[tuple[str, Any]]:
        """Record a superstep's outcomes in one commit; raise a node's error.

        `at_end`: called when the superstep ends the run (nothing left to run: paused or
        done, no node failed), for a guard to commit its events with (`_commit`)."""
        thread = self._thread()
        outcomes.sort(key=lambda outcome: outcome.node)
        check_one_writer_per_key(thread, outcomes)
        closed_before = thread.step
        chunks = self._apply(thread, outcomes)
        failure = next((o.error for o in outcomes if o.error is not None), None)
        guard = None
        if at_end is not None and failure is None and not thread.runnable():
            guard = at_end()
        self._commit(guard, again=lambda fresh: self._apply(fresh, outcomes))
        if failure is not None:
            raise failure
        if self._thread().step != closed_before:
            chunks.extend(self._values_chunk())
        elif self._thread().interrupts:
            chunks.extend(self._interrupt_chunks())
        return chunks

    def _apply(self, thread: WorkflowThread, outcomes: list[Outcome]) -> list[tuple[str, Any]]:
        """A superstep's outcomes as the thread's new events; its `updates` chunks."""
        step = thread.step + 1
        chunks: list[tuple[str, Any]] = []
        for outcome in outcomes:
            if outcome.update is not None:
                thread.complete_node(
                    outcome.node,
                    outcome.update,
                    outcome.routes,
                    outcome.duration_ms,
                    outcome.applied,
                )
                if "updates" in self.modes:
                    chunks.append(("updates", {outcome.node: outcome.update}))
        for outcome in outcomes:
            # A question asked as the thread was stopped is moot: no one is to answer it.
            if outcome.interrupt is not None and thread.status != CANCELLED:
                thread.raise_interrupt(
                    step=step,
                    node=outcome.node,
                    index=outcome.interrupt.index,
                    value=outcome.interrupt.value,
                    policy=self.graph.interrupt_policy(outcome.interrupt.policy),
                    reasked=outcome.interrupt.reasked,
                )
        for outcome in outcomes:
            if outcome.error is not None:
                thread.fail_node(outcome.node, outcome.error)
        return chunks

    # -- results -------------------------------------------------------

    def result(self) -> dict[str, Any]:
        """What `invoke` returns: the values, plus `__interrupt__` when paused."""
        thread = self._thread()
        values = thread.current_values()
        if thread.interrupts:
            values["__interrupt__"] = pending_interrupts(thread)
        return values

    def _values_chunk(self) -> list[tuple[str, Any]]:
        return values_chunks(self._thread(), self.modes)

    def _interrupt_chunks(self) -> list[tuple[str, Any]]:
        return interrupt_chunks(self._thread(), self.modes)

    # -- plumbing ------------------------------------------------------

    def _thread(self) -> WorkflowThread:
        assert self.thread is not None, "the run has not begun"
        return self.thread

    def _commit(
        self,
        guard: object | None = None,
        again: Callable[[WorkflowThread], object] | None = None,
    ) -> None:
        """Record the run's end if it has ended, then commit the new events (with `guard`).

        A run has begun if input or an answer started it (the thread's run_id),
        or if this run stepped at all (continuing a fork or an edited thread).

        `again`: how to make the new events anew on the thread as recorded, when another
        writer recorded only asides meanwhile (its metadata, a question still open
        assigned or expired, its cancellation: `WorkflowThread.ASIDES`): the commit is then
        made on it, not refused, since the nodes have run and their outcomes stand.
        Anything else another writer recorded refuses the commit.
        """
        ended = self.ended
        for _ in range(RECORD_ATTEMPTS):
            thread = self.thread
            if thread is None:
                return
            begun = thread.run_id is not None or self.steps_run > 0
            if begun and not self.ended and thread.status == IDLE:
                thread.complete()
                self.ended = True
            if self.store is None:
                thread.collect_events()
                return
            base = thread.version - len(thread.pending_events)
            try:
                position = self.store.record(thread, guard=guard)
            except ConcurrentUpdateError:
                fresh = None if again is None else self.store.past_asides(thread.thread_id, base)
                if again is None or fresh is None:
                    self.thread = None  # its in-memory state ran ahead of the store
                    raise
                self.thread, self.ended = fresh, ended
                again(fresh)
                continue
            except Exception:
                self.thread = None  # its in-memory state ran ahead of the store
                raise
            if position is not None:
                self.position = position
            return
        thread_id = self._thread().thread_id
        self.thread = None
        raise ConcurrentUpdateError(thread_id)
