"""Reading threads as LangGraph's StateSnapshots, by folding their events.

A checkpoint is the event that starts a run (InputReceived), closes a
superstep (the last NodeCompleted of the step) or edits the state
(StateEdited). Its id names that event's version and is bound to the
event's hash, so an id from another thread or a rewritten event is refused.
A checkpoint's snapshot shows the thread as it stood until the next
checkpoint: the interrupts raised meanwhile, and each task's result.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from typing import Any
from uuid import UUID

from domain.application import Workflows
from domain.errors import CheckpointNotFoundError, MissingThreadIdError, ThreadCancelledError
from domain.thread import CANCELLED, WorkflowThread
from domain.types import Interrupt, PregelTask, StateSnapshot

_WINDOW_PAGE = 64


@lru_cache(maxsize=65536)
def checkpoint_id(version: int, event_hash: str) -> str:
    """A checkpoint id: the version in the high bits, the event's hash below."""
    return str(UUID(int=(version << 64) | int(event_hash[:16], 16)))


def parse_checkpoint_id(thread_id: str, value: str) -> tuple[int, str]:
    try:
        number = UUID(str(value)).int
    except ValueError:
        raise CheckpointNotFoundError(thread_id, str(value)) from None
    return number >> 64, f"{number & (2**64 - 1):016x}"


def checkpoint_config(thread: WorkflowThread) -> dict[str, Any]:
    return _config(thread.thread_id, thread.checkpoint)


def check_writable(thread: WorkflowThread) -> None:
    if thread.status == CANCELLED:
        raise ThreadCancelledError(thread.thread_id)


def _config(thread_id: str, checkpoint: dict[str, Any] | None) -> dict[str, Any]:
    configurable: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ""}
    if checkpoint is not None:
        configurable["checkpoint_id"] = checkpoint_id(checkpoint["version"], checkpoint["hash"])
    return {"configurable": configurable}


def _thread_id(config: dict[str, Any]) -> str:
    thread_id = (config.get("configurable") or {}).get("thread_id")
    if not thread_id:
        raise MissingThreadIdError
    return str(thread_id)


def empty_snapshot(config: dict[str, Any]) -> StateSnapshot:
    """What LangGraph answers for a thread it has never seen."""
    return StateSnapshot({}, (), config, None, None, None, (), ())


def get_state(store: Workflows, config: dict[str, Any]) -> StateSnapshot:
    thread_id = _thread_id(config)
    wanted = (config.get("configurable") or {}).get("checkpoint_id")
    if wanted:
        return _state_at_checkpoint(store, thread_id, str(wanted))
    thread = store.thread(thread_id)
    if thread is None:
        return empty_snapshot(config)
    return _snapshot(thread, _Window(), current=True)


def load_checkpoint(store: Workflows, thread_id: str, wanted: str) -> WorkflowThread:
    """The thread as it stood at checkpoint `wanted`, or CheckpointNotFoundError."""
    version, hash_prefix = parse_checkpoint_id(thread_id, wanted)
    thread = store.thread(thread_id, version=version) if version > 0 else None
    checkpoint = thread.checkpoint if thread is not None else None
    if (
        thread is None
        or checkpoint is None
        or checkpoint["version"] != version
        or not checkpoint["hash"].startswith(hash_prefix)
    ):
        raise CheckpointNotFoundError(thread_id, wanted)
    return thread


def is_current_checkpoint(thread: WorkflowThread, wanted: str) -> bool:
    checkpoint = thread.checkpoint
    return checkpoint is not None and wanted == checkpoint_id(
        checkpoint["version"], checkpoint["hash"]
    )


def fork_thread_id(store: Workflows, thread_id: str, version: int) -> str:
    """The first free id of the form `<thread>~<version>`, then `~<version>.2`, ..."""
    candidate, n = f"{thread_id}~{version}", 1
    while store.thread(candidate) is not None:
        n += 1
        candidate = f"{thread_id}~{version}.{n}"
    return candidate


def _state_at_checkpoint(store: Workflows, thread_id: str, wanted: str) -> StateSnapshot:
    thread = load_checkpoint(store, thread_id, wanted)
    version = thread.version
    window = _Window()
    after = version
    while True:
        events = store.thread_events(thread_id, gt=after, lte=after + _WINDOW_PAGE)
        for event in events:
            if thread.makes_checkpoint(event):
                window.close(event)
                return _snapshot(thread, window, current=False)
            window.see(event)
            event.mutate(thread)
        if len(events) < _WINDOW_PAGE:
            return _snapshot(thread, window, current=True)
        after += _WINDOW_PAGE


def get_state_history(
    store: Workflows,
    config: dict[str, Any],
    *,
    filter: dict[str, Any] | None = None,  # noqa: A002
    before: dict[str, Any] | None = None,
    limit: int | None = None,
) -> Iterator[StateSnapshot]:
    thread_id = _thread_id(config)
    before_version = None
    if before is not None:
        before_id = (before.get("configurable") or {}).get("checkpoint_id")
        if before_id:
            before_version, _ = parse_checkpoint_id(thread_id, str(before_id))
    count = 0
    for snapshot in reversed(_history(store, thread_id)):
        if before_version is not None and _version_of(snapshot) >= before_version:
            continue
        if filter and any((snapshot.metadata or {}).get(k) != v for k, v in filter.items()):
            continue
        yield snapshot
        count += 1
        if limit is not None and count >= limit:
            return


def _version_of(snapshot: StateSnapshot) -> int:
    return UUID(snapshot.config["configurable"]["checkpoint_id"]).int >> 64


def _history(store: Workflows, thread_id: str) -> list[StateSnapshot]:
    """Every checkpoint of the thread, oldest first, in one pass over its events."""
    entries: list[StateSnapshot] = []
    thread: WorkflowThread | None = None
    window = _Window()
    for event in store.iter_thread_events(thread_id):
        if thread is None:
            thread = event.mutate(None)
            continue
        if thread.makes_checkpoint(event):
            if thread.checkpoint is not None:
                window.close(event)
                entries.append(_snapshot(thread, window, current=False))
            window = _Window()
        else:
            window.see(event)
        event.mutate(thread)
    if thread is not None and thread.checkpoint is not None:
        entries.append(_snapshot(thread, window, current=True))
    return entries


class _Window:
    """What happened between one checkpoint and the next."""

    __slots__ = ("raised", "results")

    def __init__(self) -> None:
        self.raised: dict[str, list[Interrupt]] = {}
        self.results: dict[str, Any] = {}

    def see(self, event: WorkflowThread.Event) -> None:
        if isinstance(event, WorkflowThread.InterruptRaised):
            self.raised.setdefault(event.node, []).append(
                Interrupt(value=event.value, id=event.interrupt_id)
            )
        elif isinstance(event, WorkflowThread.NodeCompleted):
            self.results[event.node] = event.update

    def close(self, event: WorkflowThread.Event) -> None:
        self.see(event)


def _snapshot(thread: WorkflowThread, window: _Window, *, current: bool) -> StateSnapshot:
    checkpoint = thread.checkpoint
    assert checkpoint is not None
    config = _config(thread.thread_id, checkpoint)
    parent = thread.parent_checkpoint
    pending = {
        interrupt_id: Interrupt(value=record["value"], id=interrupt_id)
        for interrupt_id, record in thread.interrupts.items()
    }
    nodes = thread.pending_nodes() if current else list(thread.next)
    if not current:
        nodes = list(dict.fromkeys([*thread.next, *window.results]))
    tasks = []
    shown: list[Interrupt] = []
    for node in nodes:
        if current:
            interrupts = tuple(
                pending[i] for i, r in thread.interrupts.items() if r["node"] == node
            )
        else:
            interrupts = tuple(window.raised.get(node, ()))
        shown.extend(interrupts)
        error = thread.error if thread.error and thread.error.get("node") == node else None
        tasks.append(
            PregelTask(
                id=thread.task_id(node),
                name=node,
                path=("__pregel_pull", node),
                error=None
                if error is None
                else RuntimeError(f"{error['type']}: {error['message']}"),
                interrupts=interrupts,
                state=None,
                result=window.results.get(node),
            )
        )
    metadata = {
        "source": checkpoint["source"],
        "step": checkpoint["step"],
        "parents": {},
        **thread.metadata,
    }
    return StateSnapshot(
        values=thread.current_values() if current else thread.in_schema_order(thread.values),
        next=tuple(thread.pending_nodes() if current else thread.next),
        config=config,
        metadata=metadata,
        created_at=checkpoint["created_at"],
        parent_config=None if parent is None else _config(thread.thread_id, parent),
        tasks=tuple(tasks),
        interrupts=tuple(shown),
    )
