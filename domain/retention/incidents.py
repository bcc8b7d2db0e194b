"""Incidents (EU AI Act Art. 26(5), 73): the evidence of something that went wrong,
frozen and handed over, with who opened and closed it and why.

Opening one seals the log, exports each thread's evidence bundle, places a legal
hold on the threads (so no purge removes them), and records `IncidentOpened` with
the seal's position and each bundle's SHA-256. Closing records the outcome. One
aggregate with a fixed id holds them all, so that the report lists them with one read.
"""

from __future__ import annotations

from typing import Any
from uuid import NAMESPACE_URL, uuid5

from eventsourcing.domain import Aggregate

INCIDENTS_ID = uuid5(NAMESPACE_URL, "https://holdpoint.dev/incidents")


class IncidentRegister(Aggregate):
    """`incidents` maps an incident's id (`incident-1`...) to what is known of it."""

    class Opened(Aggregate.Created):
        """The register's first event, recorded with the first incident."""

    class IncidentOpened(Aggregate.Event):
        incident_id: str
        thread_ids: list[str]
        reason: str
        actor: dict[str, Any]
        holds: list[str]
        sealed_at: int
        bundles: list[dict[str, Any]]  # each {thread_id, file, sha256}

        def apply(self, aggregate: Any) -> None:
            aggregate.opened += 1
            aggregate.incidents[self.incident_id] = {
                "incident_id": self.incident_id,
                "thread_ids": self.thread_ids,
                "reason": self.reason,
                "opened_by": self.actor.get("id"),
                "opened_at": self.timestamp.isoformat(),
                "holds": self.holds,
                "sealed_at": self.sealed_at,
                "bundles": self.bundles,
                "closed": None,
            }

    class IncidentClosed(Aggregate.Event):
        incident_id: str
        outcome: str
        actor: dict[str, Any]

        def apply(self, aggregate: Any) -> None:
            aggregate.incidents[self.incident_id]["closed"] = {
                "outcome": self.outcome,
                "closed_by": self.actor.get("id"),
                "closed_at": self.timestamp.isoformat(),
            }

    @classmethod
    def open(cls) -> IncidentRegister:
        return cls._create(cls.Opened, id=INCIDENTS_ID)

    def __init__(self, **_: Any) -> None:
        self.opened = 0
        self.incidents: dict[str, dict[str, Any]] = {}
