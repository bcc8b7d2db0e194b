"""The purges done, one `ThreadsPurged` each: what left the log, and what it was.

A purge records, for each thread it removes, the thread's head (version and
hash), the policy and the due time, and each removed event's position and
Merkle leaf hash. The positions let `holdpoint verify` tell a purged position
from a deleted one; the leaves let a seal made before the purge still be
recomputed over the log, so that the seals and their chain keep verifying.
The ledger is one aggregate with a fixed id: verify reads every purge with
one read.
"""

from __future__ import annotations

from typing import Any
from uuid import NAMESPACE_URL, uuid5

from eventsourcing.domain import Aggregate

LEDGER_ID = uuid5(NAMESPACE_URL, "https://holdpoint.dev/purge-ledger")


class PurgeLedger(Aggregate):
    class Opened(Aggregate.Created):
        """The ledger's first event, recorded with the first purge."""

    class ThreadsPurged(Aggregate.Event):
        """Threads let go by the retention policies, as one operation.

        `threads`: each {thread_id, aggregate_id, graph_id, status, policies, due_at,
        head_version, head_hash, events: [[position, leaf hash hex], ...]}.
        `sealed_at`: the position of the seal made just before, which covers them all.
        """

        operation: int
        threads: list[dict[str, Any]]
        actor: dict[str, Any]
        sealed_at: int

        def apply(self, aggregate: Any) -> None:
            aggregate.operations += 1

    @classmethod
    def open(cls) -> PurgeLedger:
        return cls._create(cls.Opened, id=LEDGER_ID)

    def __init__(self, **_: Any) -> None:
        self.operations = 0
