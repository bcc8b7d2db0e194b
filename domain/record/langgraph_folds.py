"""How the events of a real LangGraph graph's thread fold into its state.

A thread recorded by `HoldpointSaver` (ThreadStarted.engine "langgraph") keeps, beside
what every thread keeps (its interrupts, answers, who shaped it, its status), the latest
checkpoint of each of its namespaces: `heads[namespace]` (the root is ""), with the
checkpoint's channel values in their JSON form, its channel versions, the versions each
node has seen, its metadata and the writes pending on it. That is all `get_tuple` needs
for the latest checkpoint, so it is read from a snapshot and the few events after it;
an older checkpoint is read by folding the thread's events up to it
(domain/history/checkpoints.py).

The root namespace keeps its state channels in `thread.values` (what time travel, diffs
and the audit show) and LangGraph's own channels in its head.

The catalogue's events fold here as they do for the native engine (thread.py), except
where a LangGraph checkpoint, not a closing superstep, moves the thread on: each event
class names its LangGraph fold in `WorkflowThread.Event.fold_langgraph`.
"""

from __future__ import annotations

from typing import Any

from domain.record.fork_state import restore_langgraph_state
from domain.record.langgraph_record import (
    INTERRUPT,
    interrupt_ids,
    is_state_channel,
    patched,
    write_index,
)

RECENT = 8  # checkpoints a head remembers the step and time of: writes may come late


def head_values(thread: Any, namespace: str) -> dict[str, Any]:
    """Every channel value of the namespace's latest checkpoint, in its JSON form."""
    head = thread.heads.get(namespace)
    if head is None:
        return {}
    if namespace == "":
        return {**thread.values, **head["values"]}
    return dict(head["values"])


def resolved_values(
    base_values: dict[str, Any],
    base_versions: dict[str, Any],
    versions: dict[str, Any],
    changed: dict[str, Any],
    grown: dict[str, list[Any]],
) -> dict[str, Any]:
    """A checkpoint's channel values: its parent's where the version did not change, the
    ones it set, and the lists that grew by the items added."""
    values = {
        channel: value
        for channel, value in base_values.items()
        if channel in versions and versions[channel] == base_versions.get(channel)
    }
    for channel, items in grown.items():
        values[channel] = [*base_values[channel], *items]
    values.update(changed)
    return values


def fold_checkpoint(thread: Any, event: Any) -> None:
    """CheckpointSaved: the namespace's latest checkpoint is now this one."""
    namespace = event.namespace
    before = thread.heads.get(namespace)
    recent = dict(before["recent"]) if before else {}
    recent[event.checkpoint_id] = [event.step, event.ts]
    while len(recent) > RECENT:
        del recent[next(iter(recent))]
    old = before if event.base is not None else None
    base_versions = old["versions"] if old else {}
    versions = patched(base_versions, event.versions)
    seen = patched(old["seen"] if old else {}, event.seen)
    values = resolved_values(
        head_values(thread, namespace) if old else {},
        base_versions,
        versions,
        event.changed,
        event.grown,
    )
    head = {
        "id": event.checkpoint_id,
        "parent": event.parent_id,
        "ts": event.ts,
        "source": event.source,
        "step": event.step,
        "form": event.form,
        "versions": versions,
        "seen": seen,
        "metadata": event.metadata,
        "next": event.next,
        "recent": recent,
        "writes": thread.early.pop(early_key(namespace, event.checkpoint_id), []),
        "values": values,
    }
    thread.heads[namespace] = head
    if event.source == "update":  # an interrupt pending on the edited checkpoint still is
        for record in thread.interrupts.values():
            where = record.get("where", [])
            if [namespace, event.parent_id] in where:
                where.append([namespace, event.checkpoint_id])
    prefix = early_key(namespace, "")
    for key in [
        k
        for k in thread.early
        if k.startswith(prefix) and k < early_key(namespace, event.checkpoint_id)
    ]:
        del thread.early[key]  # writes on a checkpoint that was never saved
    if namespace != "":
        return
    thread.values = {k: v for k, v in values.items() if is_state_channel(k)}
    head["values"] = {k: v for k, v in values.items() if not is_state_channel(k)}
    thread.step = event.step
    thread.next = list(event.next)
    if event.source == "loop":  # a superstep ended
        thread.error = None
    thread._mark_checkpoint(event, event.source)
    thread.checkpoint["id"] = event.checkpoint_id


def early_key(namespace: str, checkpoint_id: str) -> str:
    return f"{namespace}\x1f{checkpoint_id}"


def kept_writes(thread: Any, namespace: str, checkpoint_id: str) -> list[list[Any]] | None:
    """Where the writes pending on a checkpoint are kept: on the namespace's latest
    checkpoint, or, for a checkpoint not recorded yet, aside until it is (LangGraph saves
    a step's writes in the background, so they may come before their checkpoint); None
    for an earlier checkpoint (read back by folding up to it: domain/history/checkpoints.py)."""
    head = thread.heads.get(namespace)
    if head is not None and head["id"] == checkpoint_id:
        return head["writes"]  # type: ignore[no-any-return]
    if head is None or checkpoint_id > head["id"]:  # checkpoint ids sort by time (uuid6)
        return thread.early.setdefault(early_key(namespace, checkpoint_id), [])  # type: ignore[no-any-return]
    return None


def keep_writes(kept: list[list[Any]], task_id: str, task_path: str, writes: list[Any]) -> None:
    """Keep a task's writes pending, as LangGraph's savers do: a write already kept at its
    index is kept as it was, a special one (an error, an interrupt, a resume) replaces
    the one before it."""
    for position, (channel, value) in enumerate(writes):
        index = write_index(channel, position)
        at = next((i for i, w in enumerate(kept) if w[0] == task_id and w[4] == index), None)
        entry = [task_id, channel, value, task_path, index]
        if at is None:
            kept.append(entry)
        elif index < 0:
            kept[at] = entry


def add_writes(
    thread: Any,
    namespace: str,
    checkpoint_id: str,
    task_id: str,
    task_path: str,
    writes: list[Any],
) -> None:
    """Keep a task's writes pending on their checkpoint (`kept_writes`, `keep_writes`)."""
    kept = kept_writes(thread, namespace, checkpoint_id)
    if kept is not None:
        keep_writes(kept, task_id, task_path, writes)


def fold_writes(thread: Any, event: Any) -> None:
    """WritesSaved: writes that are no node's completion, pending on their checkpoint;
    an interrupt pending elsewhere (a subgraph's, seen again by its parent) is now
    pending here too."""
    add_writes(
        thread, event.namespace, event.checkpoint_id, event.task_id, event.task_path, event.writes
    )
    for channel, value in event.writes:
        if channel != INTERRUPT:
            continue
        for interrupt_id in interrupt_ids(value):
            record = thread.interrupts.get(interrupt_id)
            if record is not None:
                where = [event.namespace, event.checkpoint_id]
                if where not in record.setdefault("where", []):
                    record["where"].append(where)


def fold_node_completed(thread: Any, event: Any) -> None:
    """NodeCompleted: a task's writes, pending until the next checkpoint applies them; not
    those of a task that ran on a refused answer (its node runs again)."""
    task = event.task
    if not task.get("refused"):
        writes = task.get("writes") or list(event.update.items())
        add_writes(
            thread, task["namespace"], task["checkpoint_id"], event.task_id, task["path"], writes
        )
    thread.answers.pop(event.node, None)
    if event.applied and not thread.interrupts:  # the decisions took effect
        thread.shapers = {}
    if thread.error is not None and thread.error.get("node") == event.node:
        thread.error = None


def fold_interrupt_raised(thread: Any, event: Any) -> None:
    """InterruptRaised: pending, where its task raised it. (A question it replaces was
    superseded by an event of its own, just before: InterruptSuperseded.)"""
    task = event.task
    thread.interrupts[event.interrupt_id] = {
        "node": event.node,
        "index": event.index,
        "value": event.value,
        "step": event.step,
        "raised_at": event.timestamp.isoformat(),
        "required_role": event.required_role,
        "reason_required": event.reason_required,
        "due_by": event.due_by,
        "on_expiry": event.on_expiry,
        "digest": event.digest,
        "approvals": event.approvals,
        "approved_by": [],
        "decision_values": event.decision_values,
        "namespace": task["namespace"],
        "task_id": task["task_id"],
        "where": [[task["namespace"], task["checkpoint_id"]]],
        "response_schema": task.get("response_schema"),
    }


def fold_input(thread: Any, event: Any) -> None:
    """InputReceived: a run begins; its input checkpoint (CheckpointSaved) follows."""
    thread.run_id = event.run_id
    thread.error = None
    thread.decided = {}
    who = str(event.actor.get("id"))
    thread.shapers.setdefault(who, f"sent input to thread {thread.thread_id!r}")


def fold_state_edited(thread: Any, event: Any) -> None:
    """StateEdited: who edited; the edit's checkpoint (CheckpointSaved) follows, or, for a
    Command's update, the writes (WritesSaved)."""
    who = str(event.actor.get("id"))
    thread.shapers.setdefault(who, f"edited the state of thread {thread.thread_id!r}")


def fold_superseded(thread: Any, event: Any) -> None:
    """InterruptSuperseded: no longer pending, unanswered."""
    thread.interrupts.pop(event.interrupt_id, None)


def fold_copied(thread: Any, event: Any) -> None:
    """ThreadForked of a LangGraph thread (a copy): it starts with the source's latest
    checkpoints; the earlier ones are read through the source (domain/history/lineage.py)."""
    restore_langgraph_state(thread, event.state, event.thread_id, event.source_thread_id)
    thread._mark_checkpoint(event, "fork")
    root = thread.heads.get("")
    if root is not None:
        thread.checkpoint["id"] = root["id"]
