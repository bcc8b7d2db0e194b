"""LangGraph's `Runtime`: what a node that takes a `runtime` parameter is given.

`from domain.runtime import Runtime, get_runtime`, as from `langgraph.runtime`. Its
`context` is the run's `context=` (`invoke(..., context=...)`, or `context` in an
HTTP run's body): run-scoped, given again on each run, as in LangGraph, and not
recorded in the thread's events. `store` is None (the native engine has no
long-term store: `compile(store=...)` is refused), `previous` is None (no
functional API), and `stream_writer` writes nowhere, as LangGraph's does when no
`custom` stream is read (the native engine streams no `custom` mode).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from domain.engine.task_context import current_task

ContextT = TypeVar("ContextT")


def _writes_nowhere(_: Any) -> None:
    """LangGraph's stream writer when no `custom` stream is read."""


@dataclass(frozen=True, slots=True)
class Runtime(Generic[ContextT]):
    context: ContextT = field(default=None)  # type: ignore[assignment]
    store: None = None
    stream_writer: Callable[[Any], None] = _writes_nowhere
    previous: None = None


def get_runtime(context_schema: type[ContextT] | None = None) -> Runtime[ContextT]:  # noqa: ARG001 - LangGraph's signature: the schema only types the result
    """The running node's Runtime; RuntimeError outside a running node."""
    try:
        runtime: Runtime[ContextT] = current_task().runtime
    except RuntimeError:
        msg = "get_runtime() was called outside a running graph node"
        raise RuntimeError(msg) from None
    return runtime
