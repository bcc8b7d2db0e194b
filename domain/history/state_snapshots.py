"""Reading threads as LangGraph's StateSnapshots, by folding their events.

A checkpoint is the event that starts a run (InputReceived), closes a
superstep (the last NodeCompleted of the step) or edits the state
(StateEdited). Its id names that event's version and is bound to the
event's hash, so an id from another thread or a rewritten event is refused.
A checkpoint's snapshot shows the thread as it stood until the next
checkpoint: the interrupts raised meanwhile, and each task's result.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import Any
from uuid import UUID

from domain.errors import CheckpointNotFoundError, MissingThreadIdError, ThreadCancelledError
from domain.record.application import ThreadAt, Workflows
from domain.record.thread import WorkflowThread
from domain.record.thread_state import CANCELLED
from domain.types import Interrupt, PregelTask, StateSnapshot

_FIRST_PAGE = 8
_WINDOW_PAGE = 64
_MAX_VERSION = 2**62  # a checkpoint id's version above this names nothing (and fits no column)


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
    return _current_snapshot(thread)


def load_checkpoint(store: Workflows, thread_id: str, wanted: str) -> WorkflowThread:
    """The thread as it stood at checkpoint `wanted`, or CheckpointNotFoundError."""
    return _checkpoint_at(store, thread_id, wanted).thread


def _checkpoint_at(store: Workflows, thread_id: str, wanted: str, ahead: int = 0) -> ThreadAt:
    """The thread at checkpoint `wanted` and the `ahead` events after it (one query on the
    SQL stores: see `Workflows.read_at`)."""
    version, hash_prefix = parse_checkpoint_id(thread_id, wanted)
    found = store.thread_at(thread_id, version, ahead) if 0 < version <= _MAX_VERSION else None
    checkpoint = None if found is None else found.thread.checkpoint
    if (
        checkpoint is None
        or checkpoint["version"] != version
        or not checkpoint["hash"].startswith(hash_prefix)
    ):
        raise CheckpointNotFoundError(thread_id, wanted)
    assert found is not None
    return found


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
    """A past checkpoint as LangGraph shows it: folded up to the next checkpoint.

    The first events after the checkpoint come with the read of the thread
    itself (`_FIRST_PAGE` of them: the next checkpoint is seldom further, one
    superstep on); a longer gap reads on, `_WINDOW_PAGE` events at a time.
    """
    found = _checkpoint_at(store, thread_id, wanted, ahead=_FIRST_PAGE)
    thread = found.thread
    events: Iterable[WorkflowThread.Event] = found.after
    window = _Window()
    after, page = thread.version, _FIRST_PAGE
    while True:
        read = 0
        for event in events:
            read += 1
            if thread.makes_checkpoint(event):
                window.close(event)
                return _past_snapshot(thread, window)
            window.see(event)
            event.mutate(thread)
        if read < page:
            return _current_snapshot(thread)
        after, page = after + page, _WINDOW_PAGE
        events = store.thread_events(thread_id, gt=after, lte=after + page)


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
    """Every checkpoint of the thread, oldest first, in one pass over its events.

    One query reads the events; each is decoded and folded once, and each
    checkpoint's snapshot is built from the thread as it stands when the next
    checkpoint comes (a snapshot copies what it shows, so one window serves
    them all).
    """
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
                entries.append(_past_snapshot(thread, window))
            window.clear()
        else:
            window.see(event)
        event.mutate(thread)
    if thread is not None and thread.checkpoint is not None:
        entries.append(_current_snapshot(thread))
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

    def clear(self) -> None:
        self.raised.clear()
        self.results.clear()


def _past_snapshot(thread: WorkflowThread, window: _Window) -> StateSnapshot:
    """A checkpoint that a later one followed: the step it opened, with each task's
    result and the interrupts raised before the next checkpoint.

    The history builds one per checkpoint, so this is the hot path of a listing:
    positional NamedTuple construction, nothing computed that a past checkpoint
    does not show.
    """
    checkpoint = thread.checkpoint
    assert checkpoint is not None
    thread_id = thread.thread_id
    parent = thread.parent_checkpoint
    results, raised = window.results, window.raised
    failed = _failed_node(thread)
    tasks = []
    shown: list[Interrupt] = []
    for node in dict.fromkeys([*thread.next, *results]) if results else thread.next:
        interrupts = tuple(raised[node]) if node in raised else ()
        shown += interrupts
        error = _task_error(thread) if node == failed else None
        task = PregelTask(
            thread.task_id(node), node, ("__pregel_pull", node), error, interrupts, None,
            results.get(node),
        )  # fmt: skip
        tasks.append(task)
    return StateSnapshot(
        thread.in_schema_order(thread.values),
        tuple(thread.next),
        _config(thread_id, checkpoint),
        _metadata(thread, checkpoint),
        checkpoint["created_at"],
        _parent_config(thread, parent),
        tuple(tasks),
        tuple(shown),
    )


def _current_snapshot(thread: WorkflowThread) -> StateSnapshot:
    """The latest checkpoint: the open step's pending nodes and interrupts."""
    checkpoint = thread.checkpoint
    assert checkpoint is not None
    parent = thread.parent_checkpoint
    failed = _failed_node(thread)
    pending = thread.pending_nodes()
    tasks = []
    shown: list[Interrupt] = []
    for node in pending:
        interrupts = tuple(
            Interrupt(value=record["value"], id=interrupt_id)
            for interrupt_id, record in thread.interrupts.items()
            if record["node"] == node
        )
        shown.extend(interrupts)
        tasks.append(
            PregelTask(
                id=thread.task_id(node),
                name=node,
                path=("__pregel_pull", node),
                error=_task_error(thread) if node == failed else None,
                interrupts=interrupts,
                state=None,
                result=None,
            )
        )
    return StateSnapshot(
        values=thread.current_values(),
        next=tuple(pending),
        config=_config(thread.thread_id, checkpoint),
        metadata=_metadata(thread, checkpoint),
        created_at=checkpoint["created_at"],
        parent_config=_parent_config(thread, parent),
        tasks=tuple(tasks),
        interrupts=tuple(shown),
    )


def _parent_config(thread: WorkflowThread, parent: dict[str, Any] | None) -> dict[str, Any] | None:
    """The checkpoint before; for a fork's first, the source thread's version it was forked
    at (its event's hash in the id), so that a fork's history leads back to its source."""
    if parent is not None:
        return _config(thread.thread_id, parent)
    origin = thread.forked_from
    if origin is None:
        return None
    return _config(origin["thread_id"], {"version": origin["version"], "hash": origin["hash"]})


def _metadata(thread: WorkflowThread, checkpoint: dict[str, Any]) -> dict[str, Any]:
    return {
        "source": checkpoint["source"],
        "step": checkpoint["step"],
        "parents": {},
        **thread.metadata,
    }


def _failed_node(thread: WorkflowThread) -> str | None:
    """The node whose failure the thread records, if one did (not the run as a whole)."""
    error = thread.error
    return error.get("node") if error else None


def _task_error(thread: WorkflowThread) -> Exception:
    error = thread.error
    assert error is not None
    return RuntimeError(f"{error['type']}: {error['message']}")
