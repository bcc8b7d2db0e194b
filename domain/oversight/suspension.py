"""A graph's suspension: the stop button for a whole graph (Art. 14(4)(e)).

While a graph is suspended it takes no new run and no resume (a decision on one of its
interrupts included), so that no work of it moves on until someone lifts the
suspension. Both are facts with who and why: `GraphSuspended`, `SuspensionLifted`.
Runs already under way go to their end (stop them one by one with a thread's cancel).
"""

from __future__ import annotations

from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import Aggregate

SUSPENSION_NAMESPACE = uuid5(NAMESPACE_URL, "https://holdpoint.dev/graph-suspensions")


def suspension_uuid(graph_id: str) -> UUID:
    return uuid5(SUSPENSION_NAMESPACE, graph_id)


class GraphSuspension(Aggregate):
    """One graph's suspensions and lifts, in order: its first suspension makes it."""

    class GraphSuspended(Aggregate.Created):
        graph_id: str
        actor: dict[str, Any]
        reason: str

    class GraphResuspended(Aggregate.Event):
        """Suspended again, after a lift."""

        actor: dict[str, Any]
        reason: str

        def apply(self, aggregate: Any) -> None:
            aggregate.suspended = {"by": self.actor.get("id"), "reason": self.reason}

    class SuspensionLifted(Aggregate.Event):
        actor: dict[str, Any]
        reason: str

        def apply(self, aggregate: Any) -> None:
            aggregate.suspended = None

    @staticmethod
    def create_id(graph_id: str) -> UUID:
        return suspension_uuid(graph_id)

    def __init__(self, graph_id: str, actor: dict[str, Any], reason: str) -> None:
        self.graph_id = graph_id
        self.suspended: dict[str, Any] | None = {"by": actor.get("id"), "reason": reason}
