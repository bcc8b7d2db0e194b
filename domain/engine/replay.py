"""Replay: run today's node code against a thread's record, and say where it differs.

Reading a thread never runs its code (see `domain.history.time_travel`). Replay is
the one deliberate exception, for finding code drift before a deploy: the
thread's events are folded one by one, in memory, and every recorded node
attempt (a NodeCompleted, an InterruptRaised or a NodeFailed) is run again
with today's code, on the state the node saw then and with the answers it
had then. Its outcome is compared with the record; then the record (not the
new outcome) is folded, so each step is checked on its own recorded inputs.
Nothing is written: replay takes events and returns a report.

A node's code runs for real: side effects in it (a payment, an email) happen
again. Replay the threads of graphs whose nodes are side-effect free, or
whose side effects are stubbed, as a test suite would.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from eventsourcing.utils import get_topic

from domain.engine.node_tasks import node_action
from domain.engine.task_context import TaskContext, enter_task, leave_task
from domain.errors import GraphInterrupt, HoldpointError
from domain.graph.constants import START
from domain.record.hashing import to_json
from domain.record.schema import as_state
from domain.record.thread import WorkflowThread
from domain.runtime import Runtime

if TYPE_CHECKING:
    from domain.graph.compiled import CompiledStateGraph
    from domain.record.application import Workflows

MATCH = "match"
DIFFERENT_UPDATE = "different-update"  # the node completed, with another update
DIFFERENT_ROUTE = "different-route"  # same update, other next nodes
INTERRUPT_GONE = "interrupt-gone"  # the record paused here; the code no longer does
NEW_INTERRUPT = "new-interrupt"  # the record completed here; the code now pauses
DIFFERENT_INTERRUPT = "different-interrupt"  # both pause, with another payload or index
NOW_FAILS = "now-fails"  # the code raises where the record has an outcome
NO_LONGER_FAILS = "no-longer-fails"  # the record has a failure; the code no longer raises
DIFFERENT_ERROR = "different-error"  # both fail, with another error type
NODE_MISSING = "node-missing"  # the node is no longer in the graph

COMPLETED, INTERRUPTED, FAILED = "completed", "interrupted", "failed"


@dataclass(frozen=True)
class Outcome:
    """What one node attempt produced, recorded or replayed, as plain JSON."""

    kind: str  # completed, interrupted or failed
    update: dict[str, Any] | None = None
    routes: list[str] | None = None
    index: int | None = None
    value: Any = None
    error_type: str | None = None
    message: str | None = None

    def as_json(self) -> dict[str, Any]:
        if self.kind == COMPLETED:
            return {"outcome": self.kind, "update": self.update, "routes": self.routes}
        if self.kind == INTERRUPTED:
            return {"outcome": self.kind, "index": self.index, "value": self.value}
        return {"outcome": self.kind, "error_type": self.error_type, "message": self.message}


@dataclass(frozen=True)
class ReplayStep:
    """One recorded node attempt, replayed: the verdict and both outcomes."""

    version: int
    step: int
    node: str
    verdict: str
    detail: str
    recorded: Outcome
    replayed: Outcome | None  # None when the node no longer exists

    @property
    def matches(self) -> bool:
        return self.verdict == MATCH


@dataclass(frozen=True)
class ReplayReport:
    """A thread replayed on today's code: each step's verdict, and the graph digests."""

    thread_id: str
    graph_id: str
    recorded_digest: str
    current_digest: str
    steps: list[ReplayStep] = field(default_factory=list)

    @property
    def digest_matches(self) -> bool:
        return self.recorded_digest == self.current_digest

    @property
    def divergences(self) -> list[ReplayStep]:
        return [step for step in self.steps if not step.matches]

    @property
    def matches(self) -> bool:
        """True when every recorded step came out the same with today's code."""
        return not self.divergences


def replay_thread(
    events: Iterable[WorkflowThread.Event], graph: CompiledStateGraph
) -> ReplayReport:
    """Replay the thread whose events (oldest first) are given on `graph`'s code."""
    thread: WorkflowThread | None = None
    steps: list[ReplayStep] = []
    for event in events:
        if thread is None:
            thread = event.mutate(None)
            continue
        recorded = _recorded(event)
        if recorded is not None:
            node, step = event.node, event.step  # type: ignore[attr-defined]
            if node != START:
                steps.append(_replay_node(graph, thread, event, recorded))
            elif START in graph.builder.branches:  # a conditional entry point is code too
                routes = _routes(graph, START, thread, recorded.update or {}, [])
                steps.append(_judge(event.originator_version, step, START, recorded, routes))
        event.mutate(thread)
    if thread is None:
        msg = "replay_thread needs the thread's events, from its first"
        raise ValueError(msg)
    return ReplayReport(
        thread_id=thread.thread_id,
        graph_id=thread.graph_id,
        recorded_digest=thread.graph_digest,
        current_digest=graph.digest,
        steps=steps,
    )


def threads_by_graph(store: Workflows, page: int = 1000) -> dict[str, list[str]]:
    """Every thread's id by the graph it was started or forked on, oldest first.

    Read from the store's log, filtered to the two events that begin threads,
    in one pass: it writes nothing (not even a read model).
    """
    topics = [get_topic(WorkflowThread.ThreadStarted), get_topic(WorkflowThread.ThreadForked)]
    found: dict[str, list[str]] = {}
    start = 1
    while True:
        notifications = store.recorder.select_notifications(start, page, topics=topics)
        for notification in notifications:
            event = store.mapper.to_domain_event(notification)
            found.setdefault(event.graph_id, []).append(event.thread_id)  # type: ignore[attr-defined]
        if len(notifications) < page:
            return found
        start = notifications[-1].id + 1


# -- one node attempt -------------------------------------------------------


def _recorded(event: WorkflowThread.Event) -> Outcome | None:
    """The outcome a node attempt event records, or None for any other event."""
    if isinstance(event, WorkflowThread.NodeCompleted):
        return Outcome(COMPLETED, update=event.update, routes=list(event.routes))
    if isinstance(event, WorkflowThread.InterruptRaised):
        return Outcome(INTERRUPTED, index=event.index, value=event.value)
    if isinstance(event, WorkflowThread.NodeFailed):
        return Outcome(FAILED, error_type=event.error_type, message=event.message)
    return None


def _replay_node(
    graph: CompiledStateGraph,
    thread: WorkflowThread,
    event: WorkflowThread.Event,
    recorded: Outcome,
) -> ReplayStep:
    node, step = event.node, event.step  # type: ignore[attr-defined]
    version = event.originator_version
    if node not in graph.builder.nodes:
        detail = f"node {node!r} is not in today's graph"
        return ReplayStep(version, step, node, NODE_MISSING, detail, recorded, None)
    return _judge(version, step, node, recorded, _run_node(graph, thread, node))


def _run_node(graph: CompiledStateGraph, thread: WorkflowThread, node: str) -> Outcome:
    """Run `node` as the runtime did: on the step's state, with the answers it had."""
    spec = graph.builder.nodes[node]
    # A run's context is not recorded: the node's runtime has none.
    runtime: Runtime[None] = Runtime()
    context = TaskContext(
        node=node, durable=True, answers=list(thread.answers.get(node, ())), runtime=runtime
    )
    config = {"configurable": {"thread_id": thread.thread_id}, "metadata": thread.metadata}
    token = enter_task(context)
    try:  # on a copy of the values, so that the fold stays intact whatever the node does
        state = as_state(graph.state_schema, copy.deepcopy(thread.values))
        action = node_action(spec, runtime)
        returned = action(*((state, config) if spec.takes_config else (state,)))
        if spec.is_async:
            returned = asyncio.run(returned)
    except GraphInterrupt as pause:
        try:
            value = to_json(pause.value, f"The interrupt() value of node {node!r}")
        except HoldpointError as error:
            return _failure(error)
        return Outcome(INTERRUPTED, index=pause.index, value=value)
    except Exception as error:  # the node's failure is the outcome to compare
        return _failure(error)
    finally:
        leave_task(token)
    try:
        update, goto = graph.node_update(node, returned)
    except HoldpointError as error:
        return _failure(error)
    return _routes(graph, node, thread, update, goto)


def _routes(
    graph: CompiledStateGraph,
    node: str,
    thread: WorkflowThread,
    update: dict[str, Any],
    goto: list[str],
) -> Outcome:
    try:
        routes = graph.routes(node, thread.values, update, goto)
    except Exception as error:  # a conditional edge's failure, as the runtime records it
        return _failure(error)
    return Outcome(COMPLETED, update=update, routes=routes)


def _failure(error: BaseException) -> Outcome:
    return Outcome(FAILED, error_type=type(error).__name__, message=str(error))


def _judge(version: int, step: int, node: str, recorded: Outcome, replayed: Outcome) -> ReplayStep:
    verdict, detail = _verdict(node, recorded, replayed)
    return ReplayStep(version, step, node, verdict, detail, recorded, replayed)


def _verdict(node: str, recorded: Outcome, replayed: Outcome) -> tuple[str, str]:
    at = f"node {node!r}"
    if replayed.kind == FAILED and recorded.kind != FAILED:
        return NOW_FAILS, f"{at} now raises {replayed.error_type}: {replayed.message}"
    if recorded.kind == COMPLETED:
        if replayed.kind == INTERRUPTED:
            return NEW_INTERRUPT, f"{at} now pauses with interrupt {replayed.value!r}"
        if replayed.update != recorded.update:
            keys = _differing_keys(recorded.update or {}, replayed.update or {})
            return DIFFERENT_UPDATE, f"{at} now updates {', '.join(map(repr, keys))} differently"
        if replayed.routes != recorded.routes:
            return DIFFERENT_ROUTE, (
                f"{at} now routes to {_nodes(replayed.routes)}, not {_nodes(recorded.routes)}"
            )
        return MATCH, f"{at} completed with the recorded update and routes"
    if recorded.kind == INTERRUPTED:
        if replayed.kind == COMPLETED:
            return INTERRUPT_GONE, f"{at} no longer pauses: interrupt {recorded.value!r} is gone"
        if (replayed.index, replayed.value) != (recorded.index, recorded.value):
            return DIFFERENT_INTERRUPT, (
                f"{at} now pauses with {replayed.value!r} (interrupt {replayed.index}), "
                f"not {recorded.value!r} (interrupt {recorded.index})"
            )
        return MATCH, f"{at} paused with the recorded interrupt"
    if replayed.kind != FAILED:
        return NO_LONGER_FAILS, f"{at} no longer raises {recorded.error_type}"
    if replayed.error_type != recorded.error_type:
        return DIFFERENT_ERROR, (
            f"{at} now raises {replayed.error_type}, not {recorded.error_type}"
        )
    return MATCH, f"{at} raised {recorded.error_type}, as recorded"


def _differing_keys(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    return [key for key in dict.fromkeys([*old, *new]) if old.get(key, ...) != new.get(key, ...)]


def _nodes(routes: list[str] | None) -> str:
    return ", ".join(routes or []) or "the end"
