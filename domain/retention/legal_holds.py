"""Legal holds: placed and lifted with who and why; a held thread is never purged.

A hold covers one thread, a graph or a metadata match (`domain.retention.scope`).
One aggregate with a fixed id holds every hold, so that a purge reads all of them
with one read and a hold placed while a purge is planned is seen by it (the purge
records its `ThreadsPurged` only if the holds it read are still the latest).
"""

from __future__ import annotations

from typing import Any
from uuid import NAMESPACE_URL, uuid5

from eventsourcing.domain import Aggregate

HOLDS_ID = uuid5(NAMESPACE_URL, "https://holdpoint.dev/legal-holds")


class LegalHolds(Aggregate):
    """`holds` maps a hold's id (`hold-1`, `hold-2`...) to the hold in place."""

    class Opened(Aggregate.Created):
        """The register's first event, recorded with the first hold."""

    class LegalHoldPlaced(Aggregate.Event):
        hold_id: str
        scope: dict[str, Any]
        actor: dict[str, Any]
        reason: str

        def apply(self, aggregate: Any) -> None:
            aggregate.placed += 1
            aggregate.holds[self.hold_id] = {
                "hold_id": self.hold_id,
                "scope": self.scope,
                "placed_by": self.actor.get("id"),
                "reason": self.reason,
                "placed_at": self.timestamp.isoformat(),
            }

    class LegalHoldLifted(Aggregate.Event):
        hold_id: str
        actor: dict[str, Any]
        reason: str

        def apply(self, aggregate: Any) -> None:
            aggregate.holds.pop(self.hold_id, None)

    @classmethod
    def open(cls) -> LegalHolds:
        return cls._create(cls.Opened, id=HOLDS_ID)

    def __init__(self, **_: Any) -> None:
        self.placed = 0
        self.holds: dict[str, dict[str, Any]] = {}
