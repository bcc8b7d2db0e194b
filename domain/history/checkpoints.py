"""Every checkpoint of a real LangGraph graph's thread, read back from its events.

The thread keeps only each namespace's latest checkpoint (domain/record/langgraph_folds.py).
An earlier one, and the listing of them all, come from folding the thread's events from
the first: each `CheckpointSaved` makes a new head whose values the fold resolves, and
that head, kept here, goes on collecting the writes saved on its checkpoint. No node
code runs; the values stay in their JSON form (HoldpointSaver turns them back into
LangGraph's objects). A copy's events are read with its source's
(domain/history/lineage.py): its ThreadForked makes its own heads of the source's latest.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from domain.record.langgraph_folds import keep_writes
from domain.record.thread import WorkflowThread


@dataclass(frozen=True)
class CheckpointAt:
    """One checkpoint as it was saved, with the writes saved on it since."""

    namespace: str
    head: dict[str, Any]  # as langgraph_folds.fold_checkpoint makes it
    values: dict[str, Any]  # every channel value, JSON form

    @property
    def checkpoint_id(self) -> str:
        return str(self.head["id"])


def checkpoints_of(events: Iterable[WorkflowThread.Event]) -> list[CheckpointAt]:
    """The thread's checkpoints, in the order they were saved."""
    thread: Any = None
    found: dict[tuple[str, str], CheckpointAt] = {}
    for event in events:
        thread = _folded(thread, event)
        if isinstance(event, WorkflowThread.CheckpointSaved):
            found[(event.namespace, event.checkpoint_id)] = _at(thread, event.namespace)
            continue
        if isinstance(event, WorkflowThread.ThreadForked):  # a copy: its own heads from here
            for namespace, head in thread.heads.items():
                found[(namespace, head["id"])] = _at(thread, namespace)
            continue
        written = _written(event)
        if written is None:
            continue
        namespace, checkpoint_id, task_id, task_path, writes = written
        at = found.get((namespace, checkpoint_id))
        head = thread.heads.get(namespace)
        if at is not None and (head is None or head["id"] != checkpoint_id):
            keep_writes(at.head["writes"], task_id, task_path, writes)  # an earlier one's
    return list(found.values())


def _folded(thread: Any, event: WorkflowThread.Event) -> Any:
    """The thread with the event folded in; a copy's ThreadForked starts it anew (after
    its source's events: domain/history/lineage.py)."""
    return event.mutate(None if isinstance(event, WorkflowThread.ThreadForked) else thread)


def _at(thread: WorkflowThread, namespace: str) -> CheckpointAt:
    """The namespace's latest checkpoint, as the thread stands."""
    head = thread.heads[namespace]
    values = head["values"] if namespace else {**thread.values, **head["values"]}
    return CheckpointAt(namespace, head, values)


def thread_at_checkpoint(
    events: Iterable[WorkflowThread.Event], namespace: str, checkpoint_id: str
) -> WorkflowThread | None:
    """The thread as it stood when its checkpoint `checkpoint_id` of `namespace` was
    saved (None: no such checkpoint): what a run or an edit from it would go on from."""
    thread: Any = None
    for event in events:
        thread = _folded(thread, event)
        if (
            isinstance(event, WorkflowThread.CheckpointSaved)
            and event.namespace == namespace
            and event.checkpoint_id == checkpoint_id
        ):
            return thread  # type: ignore[no-any-return]
    return None


def _written(event: Any) -> tuple[str, str, str, str, list[Any]] | None:
    """Where the writes an event saves go, and the writes: (namespace, checkpoint id,
    task id, task path, writes), or None for an event that saves none."""
    if isinstance(event, WorkflowThread.WritesSaved):
        return event.namespace, event.checkpoint_id, event.task_id, event.task_path, event.writes
    if isinstance(event, WorkflowThread.NodeCompleted) and event.task is not None:
        task = event.task
        writes = task.get("writes") or list(event.update.items())
        return task["namespace"], task["checkpoint_id"], event.task_id, task["path"], writes
    return None
