"""The tasks of a superstep: each node called, sync or async, into its Outcome.

`Run` (runtime.py) plans the tasks and records their outcomes in one commit; this
module calls the nodes, each in its task context (task_context.py) and under the
graph's step timeout, and checks the outcomes of a step against each other.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from domain.engine.task_context import TaskContext, call_with_timeout, enter_task, leave_task
from domain.errors import (
    GraphDefinitionError,
    GraphInterrupt,
    HoldpointError,
    InvalidUpdateError,
    NodeTimeoutError,
)
from domain.record.hashing import to_json

if TYPE_CHECKING:
    from domain.engine.run_graph import RunGraph, RunNode
    from domain.record.thread import WorkflowThread


@dataclass(slots=True)
class Task:
    node: str
    context: TaskContext
    state: Any


@dataclass(slots=True)
class Outcome:
    """What one node run produced."""

    node: str
    update: dict[str, Any] | None = None
    routes: list[str] = field(default_factory=list)
    duration_ms: float = 0.0
    interrupt: GraphInterrupt | None = None
    error: BaseException | None = None
    applied: list[dict[str, Any]] | None = None  # the answers its interrupt() calls received


# What a node returned, made an Outcome by the run: (task, returned, perf_counter at start).
Finish = Callable[[Task, Any, float], Outcome]


def node_action(spec: RunNode, runtime: Any) -> Callable[..., Any]:
    """The node's callable, given its `runtime` (by name) if it takes one."""
    if spec.takes_runtime:
        return functools.partial(spec.action, runtime=runtime)
    return spec.action


def execute(graph: RunGraph, config: dict[str, Any], task: Task, finish: Finish) -> Outcome:
    """Call `task`'s node (not an async one); `finish` makes what it returned an Outcome."""
    spec = graph.builder.nodes[task.node]
    if spec.is_async:
        msg = f"Node {task.node!r} is async: run the graph with ainvoke() or astream()"
        return Outcome(task.node, error=GraphDefinitionError(msg))
    token = enter_task(task.context)
    started = time.perf_counter()
    try:
        action = node_action(spec, task.context.runtime)
        args = (task.state, task.context.config or config) if spec.takes_config else (task.state,)
        timeout = graph.step_timeout
        if timeout is None:
            returned = action(*args)
        else:
            returned = call_with_timeout(task.node, timeout, action, *args)
    except GraphInterrupt as pause:
        return _paused(task.node, pause)
    except Exception as error:  # a node's failure is recorded, then raised
        return Outcome(task.node, error=error)
    finally:
        leave_task(token)
    return finish(task, returned, started)


async def aexecute(graph: RunGraph, config: dict[str, Any], task: Task, finish: Finish) -> Outcome:
    """Call `task`'s node, awaited (a sync one in a worker thread); as `execute`."""
    spec = graph.builder.nodes[task.node]
    token = enter_task(task.context)
    started = time.perf_counter()
    try:
        action = node_action(spec, task.context.runtime)
        args = (task.state, task.context.config or config) if spec.takes_config else (task.state,)
        call = action(*args) if spec.is_async else asyncio.to_thread(action, *args)
        timeout = graph.step_timeout
        try:
            returned = await asyncio.wait_for(call, timeout)
        except TimeoutError:
            raise NodeTimeoutError(task.node, timeout or 0) from None
    except GraphInterrupt as pause:
        return _paused(task.node, pause)
    except Exception as error:  # a node's failure is recorded, then raised
        return Outcome(task.node, error=error)
    finally:
        leave_task(token)
    return finish(task, returned, started)


def _paused(node: str, pause: GraphInterrupt) -> Outcome:
    """A node that paused; an interrupt() value that is not JSON fails the node."""
    try:
        pause.value = to_json(pause.value, f"The interrupt() value of node {node!r}")
    except HoldpointError as error:
        return Outcome(node, error=error)
    return Outcome(node, interrupt=pause)


def check_one_writer_per_key(thread: WorkflowThread, outcomes: list[Outcome]) -> None:
    """InvalidUpdateError if two nodes of the open step write one last-value key."""
    written = thread.written_in_open_step()
    for outcome in outcomes:
        for key in outcome.update or ():
            if thread.channels.get(key, "") is not None:
                continue
            if key in written and written[key] != outcome.node:
                msg = (
                    f"At key {key!r}: Can receive only one value per step "
                    f"(nodes {written[key]!r} and {outcome.node!r} both wrote it). "
                    "Use an Annotated key to handle multiple values."
                )
                raise InvalidUpdateError(msg)
            written[key] = outcome.node
