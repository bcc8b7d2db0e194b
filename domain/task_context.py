"""The context of the node that is running, read by `interrupt()`."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from domain.errors import GraphInterrupt


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
