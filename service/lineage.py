"""A thread's lineage both ways: the thread it was forked from, and its own forks.

A fork names its source in its first event (ThreadForked); the source's
events never change, so its forks are found in the thread index read model
(`ThreadIndex.forks_of`), read here and never written. Each fork's source
version and hash then come from the fork's own first event.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from domain.history.time_travel import ForkOrigin, fork_origin
from domain.record.application import Workflows
from projections.database import Database
from projections.thread_index import ThreadIndex


@dataclass(frozen=True)
class ForkLink:
    """One fork of a thread: its id, and the source version it starts from."""

    thread_id: str
    version: int
    event_hash: str
    forked_at: datetime


@dataclass(frozen=True)
class Lineage:
    thread_id: str
    forked_from: ForkOrigin | None
    forks: list[ForkLink]


def lineage(store: Workflows, db: Database, thread_id: str) -> Lineage:
    """Where `thread_id` came from and which threads were forked from it.

    The read models in `db` must be up to date (caught up) for new forks to show.
    """
    forks = []
    for fork_id in ThreadIndex(db).forks_of(thread_id):
        origin = fork_origin(store, fork_id)
        if origin is not None:
            forks.append(ForkLink(fork_id, origin.version, origin.event_hash, origin.forked_at))
    return Lineage(thread_id, fork_origin(store, thread_id), forks)


def lineage_json(found: Lineage) -> dict[str, Any]:
    origin = found.forked_from
    return {
        "thread_id": found.thread_id,
        "forked_from": None
        if origin is None
        else {
            "thread_id": origin.thread_id,
            "version": origin.version,
            "event_hash": origin.event_hash,
            "forked_at": origin.forked_at.isoformat(),
        },
        "forks": [
            {
                "thread_id": fork.thread_id,
                "version": fork.version,
                "event_hash": fork.event_hash,
                "forked_at": fork.forked_at.isoformat(),
            }
            for fork in found.forks
        ],
    }
