"""Workflows: the event-sourced application that stores threads.

It is what a graph's `checkpointer` is. `domain.store.open_store` builds one
for a store URL; `InMemorySaver()` is one kept in memory.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.persistence import IntegrityError

from domain.errors import ConcurrentUpdateError
from domain.thread import WorkflowThread, thread_uuid

SNAPSHOT_INTERVAL = 50


class Workflows(Application[Any]):
    """Threads of workflow graphs, kept as events in one store."""

    name = "holdpoint"
    snapshotting_intervals: ClassVar[dict[type[Any], int]] = {
        WorkflowThread: SNAPSHOT_INTERVAL
    }

    def __init__(self, env: dict[str, str] | None = None, url: str = "memory://") -> None:
        super().__init__(env=env)
        self.url = url

    def __enter__(self) -> Workflows:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def thread(self, thread_id: str, version: int | None = None) -> WorkflowThread | None:
        """The thread as of `version` (default: now), or None if never recorded."""
        try:
            return self.repository.get(thread_uuid(thread_id), version=version)  # type: ignore[no-any-return]
        except AggregateNotFoundError:
            return None

    def thread_events(
        self, thread_id: str, *, gt: int | None = None, lte: int | None = None
    ) -> list[WorkflowThread.Event]:
        """The thread's recorded events, oldest first."""
        return list(self.events.get(thread_uuid(thread_id), gt=gt, lte=lte))  # type: ignore[arg-type]

    def iter_thread_events(self, thread_id: str) -> Iterator[WorkflowThread.Event]:
        return iter(self.events.get(thread_uuid(thread_id)))  # type: ignore[arg-type]

    def record(self, thread: WorkflowThread) -> int | None:
        """Commit the thread's new events together; return the last position.

        Raises ConcurrentUpdateError, having written nothing, when another
        writer appended to the thread first.
        """
        try:
            recordings = self.save(thread)
        except IntegrityError:
            raise ConcurrentUpdateError(thread.thread_id) from None
        return recordings[-1].notification.id if recordings else None

    def record_all(self, threads: Sequence[WorkflowThread]) -> int | None:
        try:
            recordings = self.save(*threads)
        except IntegrityError:
            raise ConcurrentUpdateError(threads[0].thread_id) from None
        return recordings[-1].notification.id if recordings else None
