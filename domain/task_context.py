"""The context of the node that is running, read by `interrupt()`, and the node's time limit."""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from domain.errors import GraphInterrupt, NodeTimeoutError


@dataclass(slots=True)
class TaskContext:
    """What one node run knows: its answers so far, and where it is."""

    node: str
    durable: bool
    resume_values: list[Any] = field(default_factory=list)
    calls: int = 0

    def next_resume_value(self, value: Any, policy: dict[str, Any]) -> Any:
        index = self.calls
        self.calls += 1
        if index < len(self.resume_values):
            return self.resume_values[index]
        raise GraphInterrupt(index, value, policy)


_current: ContextVar[TaskContext] = ContextVar("holdpoint_task")


def current_task() -> TaskContext:
    try:
        return _current.get()
    except LookupError:
        msg = "interrupt() was called outside a running graph node"
        raise RuntimeError(msg) from None


def enter_task(task: TaskContext) -> object:
    return _current.set(task)


def leave_task(token: object) -> None:
    _current.reset(token)  # type: ignore[arg-type]


def call_with_timeout(node: str, timeout: float, action: Callable[..., Any], *args: Any) -> Any:
    """`action(*args)` in a thread of its own, given up on after `timeout` seconds.

    Python cannot stop a thread: a node that overruns is abandoned, not
    killed. It runs on in the background with the task's context, and what it
    returns or raises is dropped; the run records NodeFailed at once.
    """
    context = contextvars.copy_context()  # the running task, for interrupt()
    outcome: dict[str, Any] = {}

    def call() -> None:
        try:
            outcome["returned"] = context.run(action, *args)
        except BaseException as error:  # handed to the waiting run
            outcome["error"] = error

    worker = threading.Thread(target=call, name=f"holdpoint-node-{node}", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise NodeTimeoutError(node, timeout)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["returned"]
