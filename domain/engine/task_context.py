"""The context of the node that is running, read by `interrupt()`, and the node's time limit."""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from domain.errors import GraphInterrupt, NodeTimeoutError
from domain.oversight.hold_points import digest_of_asked


@dataclass(slots=True)
class TaskContext:
    """What one node run knows: its answers so far, and where it is.

    `answers` are the thread's waiting answers for the node, in order, each with the
    digest of the question it answered; `applied` collects those its `interrupt()`
    calls received, for the node's NodeCompleted.
    """

    node: str
    durable: bool
    answers: list[dict[str, Any]] = field(default_factory=list)
    # The same on every run of the node in this step, after a takeover too: an idempotency
    # key for the node's side effects (`get_config()["metadata"]["holdpoint_task_id"]`).
    task_id: str = ""
    config: dict[str, Any] = field(default_factory=dict)  # what `get_config()` returns
    runtime: Any = None  # the `domain.runtime.Runtime` a node's `runtime` parameter gets
    calls: int = 0
    applied: list[dict[str, Any]] = field(default_factory=list)

    def next_resume_value(self, value: Any, policy: dict[str, Any]) -> Any:
        """The answer to the i-th `interrupt()` call, if it answered this question;
        otherwise GraphInterrupt, which pauses the node to ask it (again)."""
        index = self.calls
        self.calls += 1
        if index >= len(self.answers):
            raise GraphInterrupt(index, value, policy)
        answer = self.answers[index]
        bound = answer["digest"]
        asked = digest_of_asked(value) if bound is not None else None
        if bound is not None and asked != bound:
            raise GraphInterrupt(index, value, policy, reasked=answer["interrupt_id"])
        self.applied.append({"interrupt_id": answer["interrupt_id"], "digest": asked})
        return answer["resume"]


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
