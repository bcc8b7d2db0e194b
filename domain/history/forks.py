"""Forking a thread at any version, without running a graph's code.

The new thread starts with ThreadForked (source thread, version, and that
version's event hash) and the state as it stood at that version. A fork
taken inside a pause raises each interrupt that was pending then once more,
on the new thread, under a new id: a new pending approval, with the same
payload, required role and deadline length. The source thread is only read.

A real LangGraph graph's thread is forked (copied, as LangGraph's `copy_thread`) only
where it was at rest: the fork carries its checkpoints as they stood (the latest of
each namespace in ThreadForked, the earlier ones read through the source:
domain/history/lineage.py), so a question pending on it would be the source's own,
under LangGraph's id for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from domain.errors import HoldpointError, OversightError, ThreadCancelledError, ThreadExistsError
from domain.history.checkpoints import thread_at_checkpoint
from domain.history.lineage import lineage_events
from domain.history.state_snapshots import fork_thread_id
from domain.history.time_travel import VersionNotFoundError, head_version
from domain.oversight.hold_points import check_may_fork
from domain.record.application import Workflows
from domain.record.langgraph_record import LANGGRAPH
from domain.record.supersteps import START
from domain.record.thread import WorkflowThread
from domain.record.thread_ids import checked_thread_id
from domain.record.thread_state import CANCELLED, INTERRUPTED, RUNNING


class NothingToForkError(HoldpointError, ValueError):
    """The version comes before the thread's first checkpoint: it has no state yet."""

    def __init__(self, thread_id: str, version: int) -> None:
        super().__init__(
            f"Thread {thread_id!r} has no state at version {version} (it had only been "
            "started); fork from a later version"
        )
        self.thread_id = thread_id


class LangGraphForkError(HoldpointError, ValueError):
    """A real LangGraph graph's thread is copied or forked only at rest: the copy carries
    LangGraph's checkpoints, so a question pending on it would be the source's own, under
    the same id, and a run in progress would go on in both."""

    def __init__(self, thread_id: str, version: int, status: str) -> None:
        super().__init__(
            f"Thread {thread_id!r} ran a real LangGraph graph and was {status} at version "
            f"{version}: it is copied or forked only at rest (its copy would ask the same "
            "question under the same id, or go on with the same run); decide it first, or "
            "fork it at a version where it was at rest, or travel in time within it (a run "
            "or a state update from one of its checkpoints)"
        )
        self.thread_id = thread_id


@dataclass(frozen=True)
class ForkResult:
    """The new thread, where it came from, and the interrupts raised on it again."""

    thread_id: str
    source_thread_id: str
    source_version: int
    source_hash: str
    reraised: list[str]  # the new interrupt ids, in the order they were pending
    position: int | None  # the store's notification id of the last event written


def fork_at_version(
    store: Workflows,
    thread_id: str,
    version: int,
    actor: dict[str, Any],
    new_thread_id: str | None = None,
) -> ForkResult:
    """Record a new thread that starts as `thread_id` stood at `version`.

    `new_thread_id` defaults to `<thread>~<version>` (then `~<version>.2`, ...).
    Raises ThreadNotFoundError, VersionNotFoundError, NothingToForkError,
    LangGraphForkError, InvalidThreadIdError, ThreadExistsError or HoldPointBypassError
    (see `branch`) having written nothing but, for the last, the refusal.
    """
    head = head_version(store, thread_id)
    if not 1 <= version <= head:
        raise VersionNotFoundError(thread_id, version, head)
    source = store.thread(thread_id, version=version)
    assert source is not None
    assert source.version == version
    if source.checkpoint is None:
        raise NothingToForkError(thread_id, version)
    try:
        fork = branch(store, source, actor, new_thread_id)
    except OversightError as error:
        store.record_refusal(error, actor, "fork", thread_id)
        raise
    new_id = fork.thread_id
    reraised = [
        fork.raise_interrupt(
            step=record["step"],
            node=record["node"],
            index=record["index"],
            value=record["value"],
            policy=_policy(record),
        )
        for record in source.interrupts.values()
    ]
    position = store.record(fork)
    return ForkResult(
        thread_id=new_id,
        source_thread_id=thread_id,
        source_version=version,
        source_hash=source.head_hash,
        reraised=reraised,
        position=position,
    )


def _policy(record: dict[str, Any]) -> dict[str, Any]:
    """The interrupt's policy as `interrupt()` gave it: who may answer, how, and by when."""
    policy: dict[str, Any] = {
        "required_role": record.get("required_role"),
        "reason_required": record.get("reason_required", False),
    }
    on_expiry = record.get("on_expiry")
    if on_expiry:
        policy["deadline_seconds"] = on_expiry["seconds"]
        policy["on_expiry"] = {key: value for key, value in on_expiry.items() if key != "seconds"}
    for option in ("title", "bulk"):  # the inbox's, kept by the fork's question
        if record.get(option):
            policy[option] = record[option]
    return policy


def branch(
    store: Workflows,
    source: WorkflowThread,
    actor: dict[str, Any],
    new_thread_id: object = None,
    run_id: str | None = None,
) -> WorkflowThread:
    """A new thread (not yet recorded) that starts as `source` stands, at its checkpoint.

    The one way every fork is made (a run or an edit from a past checkpoint,
    `fork_at_version`). `new_thread_id` (default `<thread>~<version>`) follows the
    thread-id rule. A real LangGraph graph's thread is forked only at rest (else
    LangGraphForkError): the fork carries its latest checkpoints, and reads its earlier
    ones through the source (domain/history/lineage.py).
    A fork at a checkpoint inside a decision's run needs someone who may decide it
    (`hold_points.check_may_fork`: HoldPointBypassError, which the caller records as a
    refusal).
    A thread is forked at a checkpoint before its cancellation, never at or after it
    (ThreadCancelledError): a copy of a stopped thread would run on where the stop
    stopped it.
    A fork at a run's input checkpoint applies that input again, as it was recorded,
    so that the run starts over from it as LangGraph's does.
    """
    version = source.version
    if source.status == CANCELLED:  # stopped: read, never run on, by a copy neither
        raise ThreadCancelledError(source.thread_id)
    langgraph = source.engine == LANGGRAPH
    if langgraph and source.status in (INTERRUPTED, RUNNING):
        raise LangGraphForkError(source.thread_id, version, source.status)
    check_may_fork(source, actor, version)
    if new_thread_id is None:
        new_id = fork_thread_id(store, source.thread_id, version)
    else:
        new_id = checked_thread_id(new_thread_id, "fork_thread_id")
    if store.thread(new_id) is not None:
        raise ThreadExistsError(new_id)
    fork = source.fork(new_id, actor, run_id)
    if not langgraph and START in source.next and START not in source.done:
        recorded = store.thread_events(source.thread_id, gt=version, lte=version + 1)
        start = next((e for e in recorded if isinstance(e, WorkflowThread.NodeCompleted)), None)
        if start is not None and start.node == START:
            fork.complete_node(START, start.update, start.routes)
    return fork


def check_may_branch(
    store: Workflows, thread_id: str, namespace: str, checkpoint_id: str, actor: dict[str, Any]
) -> None:
    """HoldPointBypassError unless `actor` may go on from a LangGraph thread's checkpoint
    `checkpoint_id` (a run or an edit from a past checkpoint), as from a native fork
    (`hold_points.check_may_fork`): from inside a decision's run, a branch runs on under
    that decision, so only who may decide it may; before the answer, the question is
    asked again. Reads the thread's events: only for a save off the thread's head."""
    at = thread_at_checkpoint(lineage_events(store, thread_id), namespace, checkpoint_id)
    if at is not None:
        check_may_fork(at, actor, at.version)
