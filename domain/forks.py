"""Forking a thread at any version, without running a graph's code.

The new thread starts with ThreadForked (source thread, version, and that
version's event hash) and the state as it stood at that version. A fork
taken inside a pause raises each interrupt that was pending then once more,
on the new thread, under a new id: a new pending approval, with the same
payload, required role and deadline length. The source thread is only read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from domain.application import Workflows
from domain.errors import HoldpointError, ThreadExistsError
from domain.snapshots import fork_thread_id
from domain.time_travel import VersionNotFoundError, head_version


class NothingToForkError(HoldpointError, ValueError):
    """The version comes before the thread's first checkpoint: it has no state yet."""

    def __init__(self, thread_id: str, version: int) -> None:
        super().__init__(
            f"Thread {thread_id!r} has no state at version {version} (it had only been "
            "started); fork from a later version"
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
    Raises ThreadNotFoundError, VersionNotFoundError, NothingToForkError or
    ThreadExistsError having written nothing.
    """
    head = head_version(store, thread_id)
    if not 1 <= version <= head:
        raise VersionNotFoundError(thread_id, version, head)
    source = store.thread(thread_id, version=version)
    assert source is not None
    assert source.version == version
    if source.checkpoint is None:
        raise NothingToForkError(thread_id, version)
    new_id = new_thread_id or fork_thread_id(store, thread_id, version)
    if store.thread(new_id) is not None:
        raise ThreadExistsError(new_id)
    fork = source.fork(new_id, actor)
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
    return policy
