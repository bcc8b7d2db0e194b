"""Threads created over HTTP before they have a graph to run.

LangGraph's `POST /threads` makes a thread with no graph; Holdpoint records a
thread (ThreadStarted) only with its graph. A thread created with a graph
(`metadata.graph_id`, what `threads.create(graph_id=...)` sends) is recorded
at once. One created without a graph is a reservation, held in this
process's memory until its first run records it; a server restart forgets
reservations that never ran (there is nothing of them to keep).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

MAX_RESERVATIONS = 100_000


@dataclass(frozen=True)
class Reservation:
    thread_id: str
    created_at: datetime
    metadata: dict[str, Any]
    created_by: str


class Reservations:
    """Thread ids taken over HTTP whose threads have not run yet."""

    def __init__(self, limit: int = MAX_RESERVATIONS) -> None:
        self._items: OrderedDict[str, Reservation] = OrderedDict()
        self._lock = threading.Lock()
        self.limit = limit

    def add(self, thread_id: str, metadata: dict[str, Any], created_by: str) -> Reservation:
        reservation = Reservation(thread_id, datetime.now(UTC), metadata, created_by)
        with self._lock:
            self._items[thread_id] = reservation
            while len(self._items) > self.limit:
                self._items.popitem(last=False)
        return reservation

    def get(self, thread_id: str) -> Reservation | None:
        with self._lock:
            return self._items.get(thread_id)

    def drop(self, thread_id: str) -> None:
        with self._lock:
            self._items.pop(thread_id, None)

    def all(self) -> list[Reservation]:
        with self._lock:
            return list(self._items.values())
